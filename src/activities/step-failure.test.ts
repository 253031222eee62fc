import { describe, expect, it } from 'vitest';
import { NonRetryableException, UserActionRequiredException } from '../pipeline/define';
import { classifyFailure, decideFailure, nonRetryableErrorTypesOf, OutputNotSerializableError, StepTimeoutError, toJsonOutput } from './step-failure';

describe('classifyFailure', () => {
  it('treats NonRetryableException as non-retryable with its code', () => {
    expect(classifyFailure(new NonRetryableException('bad payload', 'BAD_PAYLOAD'))).toMatchObject({
      retryable: false,
      errorCode: 'BAD_PAYLOAD',
      terminalEffectStatus: 'FAILED_TERMINAL',
    });
  });
  it('marks user-action-required effects', () => {
    expect(classifyFailure(new UserActionRequiredException('call the bank'))).toMatchObject({ retryable: false, terminalEffectStatus: 'USER_ACTION_REQUIRED' });
  });
  it('treats any other throw as retryable and bounds the code', () => {
    expect(classifyFailure(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toMatchObject({ retryable: true, errorCode: 'ECONNRESET' });
    expect(classifyFailure(Object.assign(new Error('x'), { code: 'user 42 said no' }))).toMatchObject({ retryable: true, errorCode: 'OPERATOR_ERROR' });
    expect(classifyFailure(new StepTimeoutError(10))).toMatchObject({ retryable: true, errorCode: 'STEP_TIMEOUT' });
  });
});

describe('programming errors', () => {
  it.each([
    ['TypeError', () => (undefined as unknown as { x: number }).x],
    ['ReferenceError', () => new Function('return notDefinedAnywhere')()],
    ['SyntaxError', () => JSON.parse('{')],
    ['RangeError', () => new Array(-1)],
  ])('ends a thrown %s non_retryable as OPERATOR_BUG, its name in the message', (name, buggy) => {
    let thrown: unknown;
    try {
      buggy();
    } catch (err) {
      thrown = err;
    }
    expect(classifyFailure(thrown)).toMatchObject({
      retryable: false,
      errorCode: 'OPERATOR_BUG',
      errorMessage: expect.stringMatching(new RegExp(`^${name}: `)),
      terminalEffectStatus: 'FAILED_TERMINAL',
    });
  });

  it('retries a fetch that could not reach its dependency (a TypeError with a system cause)', () => {
    const unreachable = new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
    expect(classifyFailure(unreachable)).toMatchObject({ retryable: true });
  });

  it('takes the list of a step over its pipeline, the pipeline over the default, and [] to retry them all', () => {
    const bug = new RangeError('index out of range');
    expect(classifyFailure(bug, { nonRetryableErrorTypes: [] })).toMatchObject({ retryable: true, errorCode: 'OPERATOR_ERROR' });
    class LedgerClosedError extends Error {
      override name = 'LedgerClosedError';
    }
    expect(classifyFailure(new LedgerClosedError('closed'), { nonRetryableErrorTypes: ['LedgerClosedError'] })).toMatchObject({
      retryable: false,
      errorCode: 'OPERATOR_BUG',
    });
    expect(nonRetryableErrorTypesOf({}, {})).toEqual(['TypeError', 'ReferenceError', 'SyntaxError', 'RangeError']);
    expect(nonRetryableErrorTypesOf({}, { nonRetryableErrorTypes: ['X'] })).toEqual(['X']);
    expect(nonRetryableErrorTypesOf({ nonRetryableErrorTypes: [] }, { nonRetryableErrorTypes: ['X'] })).toEqual([]);
  });
});

describe('decideFailure', () => {
  const retry = { limit: 2, waitMs: 1000, maxBackoffMs: 30_000, jitter: false };
  const retryable = classifyFailure(new Error('down'));
  it('retries with the backoff delay while the budget lasts, then retry_exhausted', () => {
    expect(decideFailure(retryable, 0, retry)).toEqual({ kind: 'retry', delayMs: 1000 });
    expect(decideFailure(retryable, 1, retry)).toEqual({ kind: 'retry', delayMs: 2000 });
    expect(decideFailure(retryable, 2, retry)).toEqual({ kind: 'terminal', terminalReason: 'retry_exhausted' });
    expect(decideFailure(retryable, 0, { ...retry, limit: 0 })).toEqual({ kind: 'terminal', terminalReason: 'retry_exhausted' });
  });
  it('ends a non-retryable failure at once', () => {
    expect(decideFailure(classifyFailure(new TypeError('x is undefined')), 0, retry)).toEqual({ kind: 'terminal', terminalReason: 'non_retryable' });
  });
});

describe('toJsonOutput', () => {
  it('passes JSON through and maps undefined to null', () => {
    expect(toJsonOutput({ a: [1, 'b', null], c: { d: true } })).toEqual({ a: [1, 'b', null], c: { d: true } });
    expect(toJsonOutput(undefined)).toBeNull();
  });
  it.each([
    ['a bigint', { n: 10n }],
    ['a function', { f: () => 1 }],
    ['NaN', [Number.NaN]],
    ['a class instance', { m: new Map() }],
  ])('rejects %s', (_label, value) => {
    expect(() => toJsonOutput(value)).toThrow(OutputNotSerializableError);
  });
  it('rejects a circular structure', () => {
    const a: Record<string, unknown> = {};
    a.self = a;
    expect(() => toJsonOutput(a)).toThrow(/circular/);
  });
});
