import { describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../errors';
import { isTransient } from './db';

describe('isTransient', () => {
  it('knows a database that is starting up (57P03), shutting down or crashed', () => {
    for (const code of ['57P01', '57P02', '57P03', '40001', '40P01', '08006', 'ECONNRESET', 'ECONNREFUSED']) expect(isTransient({ code })).toBe(true);
  });

  it('finds a connection loss through the cause chain and inside an AggregateError', () => {
    expect(
      isTransient(new Error('admission failed', { cause: new Error('wrapped', { cause: Object.assign(new Error('reset'), { code: 'ECONNRESET' }) }) })),
    ).toBe(true);
    expect(isTransient(new AggregateError([Object.assign(new Error('refused'), { code: 'ECONNREFUSED' })]))).toBe(true);
    expect(isTransient(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isTransient(new StoreUnavailableError(new Error('x')))).toBe(true);
  });

  it('never retries what is not safe to: a constraint violation, a syntax error, plain errors', () => {
    for (const err of [{ code: '23505' }, { code: '42601' }, new Error('boom'), null, undefined, 'ECONNRESET']) expect(isTransient(err)).toBe(false);
  });
});
