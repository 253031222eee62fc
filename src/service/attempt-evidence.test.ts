import { describe, expect, it } from 'vitest';
import { attemptsToAsk } from './attempt-evidence';

describe("the FAILED remote step's identities a re-drive asks the worker about", () => {
  it('asks every attempt, newest first, when no attempt ended in the worker\'s own "not done"', () => {
    expect(attemptsToAsk({ attempt: 3, terminalReason: 'retry_exhausted', lastErrorCode: 'CONNECTION_REFUSED' })).toEqual([3, 2, 1]);
    expect(attemptsToAsk({ attempt: 1, terminalReason: 'non_retryable', lastErrorCode: 'RUN_TERMINATED' })).toEqual([1]);
    // An old GRPC_UNAVAILABLE may have been a dead worker as much as its own answer: asked.
    expect(attemptsToAsk({ attempt: 2, terminalReason: 'non_retryable', lastErrorCode: 'GRPC_UNAVAILABLE' })).toEqual([2, 1]);
  });

  it('leaves out the last attempt when the worker itself refused it (the kit stores a rejection as its outcome)', () => {
    expect(attemptsToAsk({ attempt: 3, terminalReason: 'non_retryable', lastErrorCode: 'HTTP_422' })).toEqual([2, 1]);
    expect(attemptsToAsk({ attempt: 1, terminalReason: 'non_retryable', lastErrorCode: 'TEMPLATE_MISSING' })).toEqual([]);
  });

  it('asks at most the newest 20', () => {
    expect(attemptsToAsk({ attempt: 30, terminalReason: 'retry_exhausted', lastErrorCode: 'HTTP_503' })).toEqual(Array.from({ length: 20 }, (_, i) => 30 - i));
  });
});
