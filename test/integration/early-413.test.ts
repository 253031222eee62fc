/**
 * An early 413 BODY_TOO_LARGE (answered while the body still streams in) closes the
 * connection in words as in deed (RFC 9112 §9.6): the headers on the wire say
 * `Connection: close` and no `Keep-Alive`, the server then closes the socket, and a pooled
 * client's next request goes out on a new connection and is answered (before, the answer
 * said keep-alive, the server destroyed the socket about 0.5 s later, and the client's next
 * request on it was lost).
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startTestEngine, type TestEngine } from '../helpers/engine';

let engine: TestEngine;
let port = 0;

beforeAll(async () => {
  engine = await startTestEngine([], { 'pipeline.server.port': 0 }, { worker: false, http: true });
  port = engine.service.ports.http!;
});
afterAll(async () => {
  await engine?.stop();
});

const JOBS = '/pipeline/admin/tenants/acme/redrive-jobs';

describe('an early 413', () => {
  it('says Connection: close on the wire, with no Keep-Alive, and closes the socket after the answer', async () => {
    const socket = net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    let received = '';
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    // Announce 8 MiB, send the headers and the first 3 MiB only (the limit is 2 MiB): the answer comes while the body is still owed.
    socket.write(
      `POST ${JOBS} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${8 * 1024 * 1024}\r\nConnection: keep-alive\r\n\r\n`,
    );
    socket.write(Buffer.alloc(3 * 1024 * 1024, 0x20));
    await closed;
    const head = received.slice(0, received.indexOf('\r\n\r\n')).toLowerCase();
    expect(head).toMatch(/^http\/1\.1 413 /);
    expect(head).toContain('\r\nconnection: close');
    expect(head).not.toContain('keep-alive');
    expect(received).toContain('"code":"BODY_TOO_LARGE"');
  });

  it("a pooled client's next requests after it are answered (Node's fetch: undici's keep-alive pool)", async () => {
    const url = `http://127.0.0.1:${port}${JOBS}`;
    const authorization = `Bearer ${ADMIN_TOKEN}`;
    const failures: string[] = [];
    const answers: [number, string | null, string | null][] = [];
    for (const size of [3 * 1024 * 1024, 4 * 1024 * 1024, 8 * 1024 * 1024]) {
      const refused = await fetch(url, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json' },
        body: Buffer.alloc(size, 0x20),
      }).catch((err: Error) => err);
      // The client may see the close before the answer while it still sends; the next request must be answered either way.
      if (!(refused instanceof Error)) {
        answers.push([refused.status, refused.headers.get('connection'), refused.headers.get('keep-alive')]);
        await refused.text();
      }
      // At once, and then once the server has had its time to close the socket.
      for (const wait of [0, 700]) {
        await new Promise((resolve) => setTimeout(resolve, wait));
        const next = await fetch(url, { headers: { authorization } }).catch((err: Error) => err);
        if (next instanceof Error)
          failures.push(`after a ${size}-byte body, wait ${wait} ms: ${String((next.cause as Error | undefined)?.message ?? next.message)}`);
        else {
          expect(next.status).toBe(200);
          await next.text();
        }
      }
    }
    expect(failures).toEqual([]);
    for (const answer of answers) expect(answer).toEqual([413, 'close', null]);
  });
});
