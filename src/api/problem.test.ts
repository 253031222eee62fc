import { Writable } from 'node:stream';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { createLog } from '../log';
import { problemHandler } from './problem';

function appThrowing(err: unknown) {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _e, done) {
      lines.push(JSON.parse(chunk.toString()));
      done();
    },
  });
  const app = new Hono();
  app.onError(problemHandler(createLog({ destination: sink })));
  app.get('/x', () => {
    throw err;
  });
  return { app, lines };
}

/** What pg throws: name "error", the SQLSTATE in `code`, SQL-ish detail in the message. */
function pgError(code: string) {
  return Object.assign(new Error('invalid input syntax: value "SECRET-VALUE"'), { name: 'error', code, severity: 'ERROR' });
}

describe('problemHandler', () => {
  it('logs an unexpected database error with its SQLSTATE, never its message, and answers 500', async () => {
    const { app, lines } = appThrowing(pgError('53300'));
    const res = await app.request('/x');
    expect(res.status).toBe(500);
    expect(lines[0]).toMatchObject({ event: 'http_unhandled_error', sqlState: '53300', error: 'error' });
    expect(JSON.stringify(lines) + (await res.text())).not.toContain('SECRET-VALUE');
  });

  it('answers a data exception (SQLSTATE class 22) that slipped past validation as 400 UNSTORABLE_VALUE', async () => {
    const { app, lines } = appThrowing(pgError('22P05'));
    const res = await app.request('/x');
    expect([res.status, (await res.json()).code]).toEqual([400, 'UNSTORABLE_VALUE']);
    expect(lines[0]).toMatchObject({ sqlState: '22P05' });
  });

  it('logs no sqlState for an error that is not from the database', async () => {
    const { app, lines } = appThrowing(Object.assign(new Error('x'), { code: 'ECONNRESET' }));
    expect((await app.request('/x')).status).toBe(500);
    expect(lines[0].sqlState).toBeUndefined();
  });
});
