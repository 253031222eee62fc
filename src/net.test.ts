import type { Server } from 'node:http';
import { describe, expect, it } from 'vitest';
import { loadConfig } from './config/config';
import { serveHttp } from './net';

describe('serveHttp', () => {
  it('sets the header and request timeouts it is given (Node: 60 s and 300 s otherwise)', async () => {
    const server = (await serveHttp({
      fetch: () => new Response('ok'),
      port: 0,
      hostname: '127.0.0.1',
      key: 'test.port',
      timeouts: { headersMs: 7_000, requestMs: 9_000 },
    })) as Server;
    try {
      expect([server.headersTimeout, server.requestTimeout]).toEqual([7_000, 9_000]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('reads them from pipeline.server.headers-timeout / request-timeout, headers at most the whole request', () => {
    const config = loadConfig({});
    expect([config['pipeline.server.headers-timeout'], config['pipeline.server.request-timeout']]).toEqual([10_000, 30_000]);
    expect(() => loadConfig({}, { 'pipeline.server.headers-timeout': '1m', 'pipeline.server.request-timeout': '30s' })).toThrow(
      /pipeline\.server\.headers-timeout must be at most pipeline\.server\.request-timeout/,
    );
  });
});
