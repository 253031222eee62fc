import { describe, expect, it } from 'vitest';
import { NonRetryableException, UserActionRequiredException } from '../pipeline/define';
import { classifyFailure, OutputNotSerializableError, StepTimeoutError, toJsonOutput } from './step-failure';

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
