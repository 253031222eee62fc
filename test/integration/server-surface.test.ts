/**
 * The HTTP surface a network sees: the API listens on pipeline.server.host (127.0.0.1 by
 * default, so no other interface reaches it), and pipeline.metrics.token-sha256 puts
 * /metrics behind its own bearer token.
 */
import { createHash } from 'node:crypto';
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config';
import { ADMIN_TOKEN, startTestEngine, type TestEngine } from '../helpers/engine';

const SCRAPE_TOKEN = 'scrape-me-please';
let engine: TestEngine;
let port = 0;

beforeAll(async () => {
  engine = await startTestEngine(
    [],
    {
      'pipeline.server.port': 0,
      'pipeline.metrics.token-sha256': createHash('sha256').update(SCRAPE_TOKEN).digest('hex'),
    },
    { worker: false, http: true },
  );
  port = engine.service.ports.http!;
});
afterAll(async () => {
  await engine?.stop();
});

/** Whether a TCP connection to host:port is accepted. */
function reachable(host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('pipeline.server.host', () => {
  it('defaults to 127.0.0.1 and refuses a value that is not a host', () => {
    expect(loadConfig({})['pipeline.server.host']).toBe('127.0.0.1');
    expect(loadConfig({ PIPELINE_SERVER_HOST: '0.0.0.0' })['pipeline.server.host']).toBe('0.0.0.0');
    expect(() => loadConfig({ PIPELINE_SERVER_HOST: 'http://x/' })).toThrow(/pipeline\.server\.host/);
  });

  it('listens on loopback only by default: another interface of this machine is refused', async () => {
    expect(await reachable('127.0.0.1')).toBe(true);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    const others = Object.values(networkInterfaces())
      .flat()
      .filter((i) => i && i.family === 'IPv4' && !i.internal)
      .map((i) => i!.address);
    for (const address of others) expect(await reachable(address)).toBe(false);
  });
});

describe('pipeline.metrics.token-sha256', () => {
  it('puts /metrics behind its own bearer token', async () => {
    const get = (authorization?: string) => fetch(`http://127.0.0.1:${port}/metrics`, { headers: authorization ? { authorization } : {} });
    const open = await get();
    expect(open.status).toBe(401);
    expect(open.headers.get('content-type')).toBe('application/problem+json');
    expect((await get(`Bearer ${ADMIN_TOKEN}`)).status).toBe(401);
    const scraped = await get(`Bearer ${SCRAPE_TOKEN}`);
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toContain('# HELP');
  });
});
