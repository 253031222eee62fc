/**
 * The step attempt's rules as the spec states them: each row of the crash matrix and of the
 * Command dispatch rules (/work/shared/spec/failure-handling-and-redrive.md, "States and
 * transitions" and "Crash matrix"; `spec:` names the table line) is a row here, state + event →
 * the decision. Pure: no Temporal, no Postgres (the e2e crash tests prove the same rows against both).
 */
import { describe, expect, it } from 'vitest';
import { transitionKey } from '../ids';
import type { RetryPolicy } from '../retry';
import type { ClaimOutcome, CommandEffect } from '../store/effect-store';
import type { EffectStatus } from '../spec-words';
import type { ExecutionRecord, RunOutcome } from '../store/execution-store';
import type { StepRequest } from '../workflows/types';
import type { StepFailure } from './step-failure';
import {
  afterDeliveryError,
  decideAttempt,
  decideAttemptEnd,
  decideBeforeInvoke,
  decideClaim,
  decideEnd,
  decideEndLost,
  decideLostCommit,
  decideRefusal,
  notOwnerEnd,
  ownsRecord,
  parkDecision,
  readsRecord,
  takesNeverTaken,
  type AttemptEvent,
  type AttemptState,
} from './step-rules';

const SPEC = 'failure-handling-and-redrive.md';
const E = 'exec-1';
const RUN = 'run-A';
const OTHER_RUN = 'run-B';
const RETRY: RetryPolicy = { limit: 2, waitMs: 1000, maxBackoffMs: 30_000, jitter: false };

function record(over: Partial<ExecutionRecord> = {}): ExecutionRecord {
  return {
    tenantId: 't1',
    executionId: E,
    executionKey: null,
    pipeline: 'orders',
    pipelineVersion: 1,
    definitionFingerprint: null,
    workflowId: 'wf',
    status: 'RUNNING',
    version: 3,
    stepCount: 3,
    currentStepIndex: 1,
    attempt: 1,
    failedStepIndex: null,
    segmentInput: { at: 'step 1' },
    nextDueAt: null,
    runId: RUN,
    redriveCount: 0,
    correlationId: null,
    resourceType: null,
    resourceName: null,
    terminalReason: null,
    lastErrorCode: null,
    lastErrorMessage: null,
    remoteCall: null,
    forkedFrom: null,
    createdAt: '2026-12-02T00:00:00.000Z',
    updatedAt: '2026-12-02T00:00:00.000Z',
    ...over,
  };
}

function request(over: Partial<StepRequest> = {}): StepRequest {
  return {
    tenantId: 't1',
    executionId: E,
    pipeline: 'orders',
    stepIndex: 1,
    stepName: 'charge',
    attempt: 1,
    retry: RETRY,
    timeoutMs: 10_000,
    input: {},
    ...over,
  };
}

function state(over: Partial<AttemptState> = {}): AttemptState {
  return { stepIndex: 1, attempt: 1, transitionKey: transitionKey(E, 1, 1), startAttempt: 1, retry: RETRY, callDeadlineMs: 10_000, ...over };
}

const retryable = (over: Partial<StepFailure> = {}): StepFailure => ({
  retryable: true,
  errorCode: 'DOWNSTREAM_503',
  errorMessage: 'busy',
  terminalEffectStatus: 'FAILED_RETRYABLE',
  ...over,
});

function effect(status: EffectStatus): ClaimOutcome {
  const stored: CommandEffect = {
    tenantId: 't1',
    executionId: E,
    stepIndex: 1,
    stepName: 'charge',
    status,
    attempt: 1,
    transitionKey: transitionKey(E, 1, 1),
    result: status === 'SUCCEEDED' ? { charged: 42 } : null,
    errorCode: null,
    createdAt: '2026-12-02T00:00:00.000Z',
    updatedAt: '2026-12-02T00:00:00.000Z',
  };
  return { claimed: false, effect: stored };
}

const deadline: AttemptEvent = {
  kind: 'outcome_unknown',
  outcome: {
    kind: 'deadline',
    protocol: 'REST',
    target: 'http://worker/charge',
    startedAt: new Date('2026-12-02T10:00:00.000Z'),
    deadlineMs: 5000,
    elapsedMs: 5003,
  },
  message: 'REST call to http://worker/charge passed its 5000 ms deadline; outcome unknown',
  invokedAt: new Date('2026-12-02T10:00:00.000Z'),
  now: Date.parse('2026-12-02T10:00:05.003Z'),
};

interface Row {
  spec: string;
  case: string;
  decide: () => unknown;
  expected: unknown;
}

/** The crash matrix (spec lines 91–96): what a delivery after each crash point decides. */
const CRASH_MATRIX: Row[] = [
  {
    spec: `${SPEC}:91 before transition state commit`,
    case: 'a redelivery (Temporal attempt 2) reads the record and re-executes the stored attempt, under the same transition identity',
    decide: () => (readsRecord(request(), 2) ? decideAttempt(request({ attempt: 1 }), record({ attempt: 3 }), RUN) : 'not read'),
    expected: { kind: 'run', attempt: 3 },
  },
  {
    spec: `${SPEC}:91 before transition state commit`,
    case: "a step's first try (the workflow knows the attempt) runs without reading the record",
    decide: () => readsRecord(request(), 1),
    expected: false,
  },
  {
    spec: `${SPEC}:91 before transition state commit`,
    case: 'a fast-path step that may have run on a worker that died reads the record at Temporal attempt 1',
    decide: () => readsRecord(request({ fastPath: true, mayHaveRun: true }), 1),
    expected: true,
  },
  {
    spec: `${SPEC}:92 after state commit, before next enqueue`,
    case: "a redelivery after the step's commit answers the stored next input and runs nothing",
    decide: () => decideAttempt(request(), record({ currentStepIndex: 2, segmentInput: { at: 'step 2' } }), RUN),
    expected: { kind: 'settled', result: { output: { at: 'step 2' } } },
  },
  {
    spec: `${SPEC}:92 after state commit, before next enqueue`,
    case: 'a fast-path redelivery after several commits carries on from the stored step',
    decide: () => decideAttempt(request({ fastPath: true }), record({ currentStepIndex: 3, segmentInput: 'out' }), RUN),
    expected: { kind: 'settled', result: { output: 'out', nextStepIndex: 3 } },
  },
  {
    spec: `${SPEC}:92 after state commit, before next enqueue`,
    case: 'a commit that lost to the committed step answers its stored output',
    decide: () => decideLostCommit(request(), record({ currentStepIndex: 2, segmentInput: 'next' }), RUN),
    expected: { kind: 'settled', result: { output: 'next' } },
  },
  {
    spec: `${SPEC}:93 during retry scheduling`,
    case: 'a retryable failure with budget left commits the retry intent (next attempt, delay) before Temporal retries',
    decide: () => decideAttemptEnd({ kind: 'failed', failure: retryable() }, state()),
    expected: { kind: 'commit_retry', nextAttempt: 2, delayMs: 1000 },
  },
  {
    spec: `${SPEC}:93 during retry scheduling`,
    case: 'a redelivery after the retry intent was committed runs the intended attempt',
    decide: () => decideAttempt(request({ attempt: 1 }), record({ attempt: 2, lastErrorCode: 'DOWNSTREAM_503' }), RUN),
    expected: { kind: 'run', attempt: 2 },
  },
  {
    spec: `${SPEC}:93 during retry scheduling`,
    case: 'a retry commit that lost to another delivery lets Temporal retry from the stored state',
    decide: () => decideLostCommit(request(), record({ attempt: 2 }), RUN),
    expected: { kind: 'moved', message: `execution ${E} moved to RUNNING step 1 attempt 2` },
  },
  {
    spec: `${SPEC}:93 during retry scheduling`,
    case: 'the budget counts from the attempt the run started the step with: past it, retry_exhausted',
    decide: () => decideAttemptEnd({ kind: 'failed', failure: retryable() }, state({ attempt: 3, startAttempt: 1, transitionKey: transitionKey(E, 1, 3) })),
    expected: {
      kind: 'commit_failed',
      terminalReason: 'retry_exhausted',
      retriesObserved: 2,
      details: { status: 'FAILED', transitionKey: transitionKey(E, 1, 3) },
    },
  },
  {
    spec: `${SPEC}:94 after external side effect, before commit`,
    case: 'a Command redelivery whose effect SUCCEEDED reuses the stored result, never invoking again',
    decide: () => decideClaim(effect('SUCCEEDED'), 1, transitionKey(E, 1, 1)),
    expected: { kind: 'reuse', output: { charged: 42 } },
  },
  {
    spec: `${SPEC}:94 after external side effect, before commit`,
    case: 'a remote delivery that cannot reach the worker after the identity was sent is unconfirmed, not a failed attempt',
    decide: () => afterDeliveryError(true, true),
    expected: { sent: true, unconfirmed: true },
  },
  {
    spec: `${SPEC}:94 after external side effect, before commit`,
    case: "only a refusal on the identity's very first send fails the attempt",
    decide: () => afterDeliveryError(false, true),
    expected: { sent: false, unconfirmed: false },
  },
  {
    spec: `${SPEC}:94 after external side effect, before commit`,
    case: 'Temporal gave the attempt up while the operator ran: commit nothing (a retry would be a new identity)',
    decide: () => decideAttemptEnd({ kind: 'superseded' }, state({ effect: { status: 'SUCCEEDED', transitionKey: transitionKey(E, 1, 1) } })),
    expected: { kind: 'superseded' },
  },
  {
    spec: `${SPEC}:95 coordinator worker dies while lease held`,
    case: "the run's own delivery after the crash owns the record",
    decide: () => ownsRecord({}, record(), RUN),
    expected: true,
  },
  {
    spec: `${SPEC}:95 coordinator worker dies while lease held`,
    case: 'a record claimed by another run (a re-drive) is not this run’s: refused, nothing run',
    decide: () => decideAttempt(request(), record({ runId: OTHER_RUN }), RUN),
    expected: { kind: 'not_owner' },
  },
  {
    spec: `${SPEC}:95 coordinator worker dies while lease held`,
    case: 'a QUEUED record (re-driven, not claimed yet) is no old run’s',
    decide: () => ownsRecord({}, record({ status: 'QUEUED', runId: null }), RUN),
    expected: false,
  },
  {
    spec: `${SPEC}:95 coordinator worker dies while lease held`,
    case: 'a superseded run ends with the outcome it committed, so the re-drive’s run can start',
    decide: () =>
      decideRefusal(
        { executionId: E },
        { stepIndex: 1, attempt: 2, outcome: 'FAILED', errorCode: 'DOWNSTREAM_503', terminalReason: 'retry_exhausted' } satisfies RunOutcome,
        false,
      ),
    expected: {
      kind: 'superseded',
      details: { status: 'FAILED', terminalReason: 'retry_exhausted', errorCode: 'DOWNSTREAM_503', transitionKey: transitionKey(E, 1, 2) },
    },
  },
  {
    spec: `${SPEC}:95 coordinator worker dies while lease held`,
    case: 'a run that never committed on the record (a Reset, a second start) is foreign',
    decide: () => decideRefusal({ executionId: E }, null, false),
    expected: { kind: 'foreign', legacy: false },
  },
  {
    spec: `${SPEC}:96 remote REST caller deadline expires`,
    case: 'parked REMOTE_OUTCOME_UNKNOWN with the call as evidence, effect AMBIGUOUS, no retry',
    decide: () => decideAttemptEnd(deadline, state({ effect: { status: 'SUCCEEDED', transitionKey: transitionKey(E, 1, 1) } })),
    expected: {
      kind: 'park',
      effect: { status: 'AMBIGUOUS' },
      remoteCall: { protocol: 'REST', target: 'http://worker/charge', deadlineMs: 5000, elapsedMs: 5003, startedAt: '2026-12-02T10:00:00.000Z' },
      details: { status: 'REMOTE_OUTCOME_UNKNOWN', terminalReason: null, errorCode: 'REMOTE_OUTCOME_UNKNOWN' },
    },
  },
  {
    spec: `${SPEC}:96 remote REST caller deadline expires`,
    case: 'a redelivery finds the step parked and ends the run as committed (it moves only by explicit re-drive, rule 3)',
    decide: () => decideAttempt(request(), record({ status: 'REMOTE_OUTCOME_UNKNOWN', failedStepIndex: 1, lastErrorCode: 'REMOTE_OUTCOME_UNKNOWN' }), RUN),
    expected: { kind: 'terminal', details: { status: 'REMOTE_OUTCOME_UNKNOWN', errorCode: 'REMOTE_OUTCOME_UNKNOWN', transitionKey: transitionKey(E, 1, 1) } },
  },
  {
    spec: `${SPEC}:96 remote REST caller deadline expires`,
    case: 'the in-progress budget running out parks the same way, the answers as evidence',
    decide: () =>
      decideAttemptEnd(
        {
          kind: 'outcome_unknown',
          outcome: {
            kind: 'in_progress_budget',
            protocol: 'GRPC',
            target: 'worker:50051',
            evidence: {
              state: 'IN_PROGRESS',
              answers: 4,
              firstAt: '2026-12-02T10:00:01.000Z',
              lastAt: '2026-12-02T10:05:01.000Z',
              budgetMs: 300_000,
              platform: null,
            },
          },
          message: 'in progress past the budget',
          invokedAt: new Date('2026-12-02T10:00:00.000Z'),
          now: Date.parse('2026-12-02T10:05:01.000Z'),
        },
        state(),
      ),
    expected: { kind: 'park', remoteCall: { startedAt: '2026-12-02T10:00:00.000Z', deadlineMs: 10_000, elapsedMs: 301_000, inProgress: { answers: 4 } } },
  },
];

/** Command dispatch (spec "States and transitions" lines 76–79 and its rules 1–2, lines 82–83). */
const COMMAND_DISPATCH: Row[] = [
  {
    spec: `${SPEC}:76 re-drive with allowFailed=false`,
    case: 'ordinary replay claims only an effect that does not exist yet: it never authorises redispatch of a retained effect',
    decide: () => decideBeforeInvoke({ stepIndex: 1, redriveIntent: 'ORDINARY' }, { name: 'charge', command: true }),
    expected: { kind: 'claim', onlyNew: true },
  },
  {
    spec: `${SPEC}:77 FAILED + allowFailed=true + intent=RETRY_FAILED_COMMAND`,
    case: 'the retry-intent replay claims the retained effect',
    decide: () => decideBeforeInvoke({ stepIndex: 1, redriveIntent: 'RETRY_FAILED_COMMAND' }, { name: 'charge', command: true }),
    expected: { kind: 'claim', onlyNew: false },
  },
  {
    spec: `${SPEC}:79 Command effect FAILED_RETRYABLE, dispatch during a retry-intent replay`,
    case: 'the next attempt is atomically claimed (the store claims it): dispatch proceeds under the new identity',
    decide: () => decideClaim({ claimed: true }, 1, transitionKey(E, 1, 2)),
    expected: { kind: 'invoke', effect: { status: 'SUCCEEDED', transitionKey: transitionKey(E, 1, 2) } },
  },
  ...(['FAILED_TERMINAL', 'IN_FLIGHT', 'AMBIGUOUS', 'USER_ACTION_REQUIRED'] as const).map((status): Row => ({
    spec: `${SPEC}:82 rule 1 (${status})`,
    case: `an effect ${status} is never redispatched: the step fails before the target, the effect left ${status}`,
    decide: () => decideClaim(effect(status), 1, transitionKey(E, 1, 2)),
    expected: {
      kind: 'fail',
      failure: { retryable: false, errorCode: 'COMMAND_EFFECT_NOT_REDISPATCHABLE', terminalEffectStatus: status },
    },
  })),
  {
    spec: `${SPEC}:82 rule 1 (success)`,
    case: 'an effect in success is never redispatched: its stored result is reused',
    decide: () => decideClaim(effect('SUCCEEDED'), 1, transitionKey(E, 1, 2)),
    expected: { kind: 'reuse', output: { charged: 42 } },
  },
  {
    spec: `${SPEC}:83 rule 2`,
    case: 'RETRY_FAILED_COMMAND on a step that is not a Command fails before the target is invoked',
    decide: () => decideBeforeInvoke({ stepIndex: 1, redriveIntent: 'RETRY_FAILED_COMMAND' }, { name: 'ship', command: false }),
    expected: { kind: 'fail', failure: { retryable: false, errorCode: 'RETRY_INTENT_NOT_A_COMMAND', terminalEffectStatus: 'FAILED_TERMINAL' } },
  },
  {
    spec: `${SPEC}:76 re-drive with allowFailed=false`,
    case: 'a step that is not a Command is invoked with no claim',
    decide: () => decideBeforeInvoke({ stepIndex: 1, redriveIntent: 'ORDINARY' }, { name: 'ship', command: false }),
    expected: { kind: 'invoke' },
  },
];

describe('the crash matrix', () => {
  it.each(CRASH_MATRIX)('$spec: $case', (row) => {
    expect(row.decide()).toMatchObject(row.expected as object);
  });
});

describe('Command dispatch', () => {
  it.each(COMMAND_DISPATCH)('$spec: $case', (row) => {
    expect(row.decide()).toMatchObject(row.expected as object);
  });
});

/** What a failed attempt commits to its Command effect (the effect statuses of spec line 62). */
describe('a Command attempt’s effect after its outcome', () => {
  const claimed = { status: 'SUCCEEDED' as const, transitionKey: transitionKey(E, 1, 1) };
  it.each([
    [
      'returned',
      { kind: 'returned', output: { ok: true } } as AttemptEvent,
      { kind: 'commit_succeeded', effect: { status: 'SUCCEEDED', result: { ok: true } } },
    ],
    [
      'retryable, budget left',
      { kind: 'failed', failure: retryable() } as AttemptEvent,
      { kind: 'commit_retry', effect: { status: 'FAILED_RETRYABLE', errorCode: 'DOWNSTREAM_503' } },
    ],
    [
      'non-retryable',
      { kind: 'failed', failure: retryable({ retryable: false, errorCode: 'BAD_CARD', terminalEffectStatus: 'FAILED_TERMINAL' }) } as AttemptEvent,
      { kind: 'commit_failed', terminalReason: 'non_retryable', effect: { status: 'FAILED_TERMINAL', errorCode: 'BAD_CARD' } },
    ],
    [
      'user action required',
      { kind: 'failed', failure: retryable({ retryable: false, errorCode: 'CALL_THE_BANK', terminalEffectStatus: 'USER_ACTION_REQUIRED' }) } as AttemptEvent,
      { kind: 'commit_failed', effect: { status: 'USER_ACTION_REQUIRED' } },
    ],
    ['outcome unknown', deadline, { kind: 'park', effect: { status: 'AMBIGUOUS' } }],
  ])('%s', (_name, event, expected) => {
    expect(decideAttemptEnd(event, state({ effect: claimed }))).toMatchObject(expected);
  });

  it('a retryable failure past the budget leaves the effect FAILED_RETRYABLE (a retry-intent re-drive may claim it)', () => {
    expect(decideAttemptEnd({ kind: 'failed', failure: retryable() }, state({ attempt: 3, effect: claimed }))).toMatchObject({
      kind: 'commit_failed',
      terminalReason: 'retry_exhausted',
      effect: { status: 'FAILED_RETRYABLE' },
    });
  });

  it('a step that is not a Command commits no effect', () => {
    expect(decideAttemptEnd({ kind: 'failed', failure: retryable() }, state())).toMatchObject({ effect: undefined });
  });

  it('"in progress" is not a failed attempt: redeliver the same identity, commit nothing', () => {
    const decision = decideAttemptEnd({ kind: 'failed', failure: retryable({ inProgress: true, retryAfterMs: 2500 }) }, state({ attempt: 3 }));
    expect(decision).toEqual({ kind: 'redeliver', delayMs: 2500, failure: expect.objectContaining({ inProgress: true }) });
  });

  it('names the park in the outcome-unknown event', () => {
    const parked = decideAttemptEnd(deadline, state());
    expect(parked.kind === 'park' && parkDecision(parked.remoteCall)).toBe('PARKED_REMOTE_OUTCOME_UNKNOWN_NO_RETRY');
  });
});

describe('a step ended from outside its attempt (abandoned, or its run closed)', () => {
  const abandon = { tenantId: 't1', executionId: E, stepIndex: 1, reason: 'worker kept dying' };
  it('commits FAILED at the stored attempt, its retries as observed', () => {
    expect(decideEnd(abandon, record({ attempt: 3 }), RUN, false)).toMatchObject({
      kind: 'commit',
      attempt: 3,
      transitionKey: transitionKey(E, 1, 3),
      retriesObserved: 2,
    });
  });
  it('a first step no delivery took is taken and ended with no retries observed', () => {
    expect(takesNeverTaken(record({ status: 'QUEUED', runId: null }), { dispatchId: 'd1' })).toBe(true);
    expect(decideEnd(abandon, record({ attempt: 2 }), RUN, true)).toMatchObject({ kind: 'commit', retriesObserved: 0 });
  });
  it('reports a step that already ended, committing nothing', () => {
    expect(
      decideEnd(abandon, record({ status: 'FAILED', failedStepIndex: 1, terminalReason: 'non_retryable', lastErrorCode: 'BAD' }), RUN, false),
    ).toMatchObject({
      kind: 'already',
      details: { status: 'FAILED', errorCode: 'BAD' },
    });
  });
  it('a run that does not own the record ends as it committed, or as a run without the record', () => {
    const other = record({ runId: OTHER_RUN });
    expect(decideEnd(abandon, other, RUN, false)).toMatchObject({ kind: 'not_owner' });
    expect(notOwnerEnd(abandon, other, null)).toMatchObject({ errorCode: 'RUN_DOES_NOT_OWN_RECORD', terminalReason: null });
    expect(notOwnerEnd(abandon, other, { stepIndex: 0, attempt: 1, outcome: 'SUCCEEDED', errorCode: null, terminalReason: null })).toMatchObject({
      errorCode: 'EXECUTION_REDRIVEN',
      stepIndex: 0,
    });
  });
  it('a lost ending commit reports what is committed, else Temporal reads again', () => {
    expect(decideEndLost(abandon, null)).toMatchObject({ kind: 'settled', details: { errorCode: 'EXECUTION_RECORD_MISSING' } });
    expect(decideEndLost(abandon, record())).toMatchObject({ kind: 'moved' });
  });
});
