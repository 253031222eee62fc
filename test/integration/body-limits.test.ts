/**
 * Body limits against a real HTTP server (the service's app on @hono/node-server, on
 * loopback): a chunked body of 256 MiB is refused with 413 after the server read a few
 * chunks, four of them leave the process's memory where it was, and a body that stops
 * arriving is answered 408 after pipeline.server.body-read-timeout.
 */
import http from 'node:http';
import { serve, type ServerType } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES } from '../../src/api/request';
import { ADMIN_TOKEN, startTestEngine, type TestEngine } from '../helpers/engine';

let engine: TestEngine;
let server: ServerType;
let port = 0;
/** bytes of request bodies the app pulled from the server, per request path */
const consumed: Record<string, number> = {};

beforeAll(async () => {
  engine = await startTestEngine([], { 'pipeline.server.body-read-timeout': '1s' }, { worker: false });
  const app = engine.service.app;
  server = serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: (req: Request) => {
      if (!req.body) return app.fetch(req);
      const path = new URL(req.url).pathname;
      const counted = req.body.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            consumed[path] = (consumed[path] ?? 0) + chunk.byteLength;
            controller.enqueue(chunk);
          },
        }),
      );
      return app.fetch(new Request(req.url, { method: req.method, headers: req.headers, body: counted, duplex: 'half' } as RequestInit));
    },
  });
  await new Promise((resolve) => server.once('listening', resolve));
  port = (server.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await engine?.stop();
});

/**
 * POSTs a chunked body of `total` bytes (64 KiB chunks from one buffer) until the server
 * answers or the body is sent; `stallAfter` bytes: stop sending there and wait.
 */
function postChunked(path: string, total: number, stallAfter?: number): Promise<{ status: number; body: string; sent: number }> {
  return new Promise((resolve, reject) => {
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    chunk[0] = 0x5b; // '[' : a JSON array of spaces, never finished
    let sent = 0;
    let answered = false;
    const req = http.request({
      host: '127.0.0.1',
      port,
      path,
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
    });
    req.on('response', (res) => {
      answered = true;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => {
        req.destroy();
        resolve({ status: res.statusCode ?? 0, body, sent });
      });
    });
    req.on('error', (err) => (answered ? undefined : reject(err)));
    const pump = () => {
      while (!answered && sent < total) {
        if (stallAfter !== undefined && sent >= stallAfter) return; // keep the connection open, send nothing more
        sent += chunk.byteLength;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      if (!answered && sent >= total) req.end();
    };
    pump();
  });
}

describe('request body limits on a real server', () => {
  it('refuses a 256 MiB chunked body with 413 after reading at most a few chunks past 64 KiB', async () => {
    const path = '/pipeline/api/tenants/acme/executions';
    consumed[path] = 0;
    const res = await postChunked(path, 256 * 1024 * 1024);
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body)).toMatchObject({ code: 'BODY_TOO_LARGE', status: 413 });
    // Hono's bodyLimit stops at the first chunk past the limit; the counting stream may hold one more.
    expect(consumed[path]).toBeGreaterThan(MAX_BODY_BYTES);
    expect(consumed[path]).toBeLessThanOrEqual(MAX_BODY_BYTES + 3 * 64 * 1024);
    expect(res.sent).toBeLessThan(256 * 1024 * 1024);
  });

  it('four 256 MiB chunked bodies leave resident memory where it was', async () => {
    const path = '/pipeline/admin/tenants/acme/executions/x/redrive';
    global.gc?.();
    const before = process.memoryUsage().rss;
    for (let i = 0; i < 4; i++) expect((await postChunked(path, 256 * 1024 * 1024)).status).toBe(413);
    global.gc?.();
    const after = process.memoryUsage().rss;
    console.log(
      `rss before ${Math.round(before / 2 ** 20)} MiB, after four 256 MiB chunked bodies ${Math.round(after / 2 ** 20)} MiB; server read ${consumed[path]} bytes of them`,
    );
    expect(after - before).toBeLessThan(64 * 2 ** 20); // the old reader held each body whole: 256 MiB apiece
    expect(consumed[path]).toBeLessThanOrEqual(4 * (MAX_BODY_BYTES + 3 * 64 * 1024));
  });

  it('answers 408 REQUEST_TIMEOUT when the body stops arriving, and changes nothing', async () => {
    const path = '/pipeline/api/tenants/acme/executions';
    const before = (await engine.service.db.query('SELECT count(*)::int AS n FROM execution_record')).rows[0];
    const res = await postChunked(path, 1024 * 1024, 8 * 1024);
    expect(res.status).toBe(408);
    expect(JSON.parse(res.body)).toMatchObject({ code: 'REQUEST_TIMEOUT', status: 408 });
    expect((await engine.service.db.query('SELECT count(*)::int AS n FROM execution_record')).rows[0]).toEqual(before);
  });
});
