/**
 * The contract points the conformance checker drives a worker through, in conformance
 * mode (conformance-mode.ts). A checker only sees answers, so each point is phrased as
 * what a conforming worker must answer: a redelivery carries a different body than the
 * first delivery, and the stored answer (its `echo` and `run`) proves the handler did not
 * run again. docs/transition-workers.md lists the points.
 */
import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { ConformanceInput, ConformanceOutput } from './conformance-mode';
import type { Answer, InvokeRequest, WorkerClient } from './worker-client';

export type CheckStatus = 'pass' | 'fail' | 'warn' | 'skip';

export interface CheckResult {
  id: string;
  /** the contract point, as a rule */
  rule: string;
  status: CheckStatus;
  detail: string;
}

export interface CheckOptions {
  /** how long the handler sleeps in the busy and deadline checks; default 2000 ms */
  busyMs?: number;
  /** the deadline of an ordinary call; default 30,000 ms */
  timeoutMs?: number;
  /** how long the checker waits for a lookup answer; default 2000 ms (the service's) */
  lookupTimeoutMs?: number;
}

/** The ids of every check, in the order they run and print. */
export const CHECK_IDS = [
  'answers',
  'platform',
  'replay',
  'new-attempt',
  'tenant-qualified',
  'lookup-before',
  'lookup-after',
  'lookup-while-busy',
  'busy-redelivery',
  'caller-deadline',
  'problem-rejection',
  'problem-retryable',
  'key-required',
  'traceparent',
] as const;

const REJECTION = { status: 422, code: 'CONFORMANCE_REJECTED', detail: 'rejected on purpose by the conformance check', retryable: false };
const UNAVAILABLE = { status: 503, code: 'CONFORMANCE_UNAVAILABLE', detail: 'failed retryably on purpose by the conformance check', retryable: true };

function conformance(body: ConformanceInput['conformance']): ConformanceInput {
  return { conformance: body };
}

function describe(answer: Answer): string {
  switch (answer.kind) {
    case 'output':
      return `${answer.status} ${JSON.stringify(answer.value)?.slice(0, 120)}`;
    case 'failure':
      return `${answer.status} → ${answer.failure.inProgress ? 'in progress' : `${answer.failure.errorCode} (${answer.failure.retryable ? 'retryable' : 'non_retryable'})`}`;
    case 'deadline':
      return 'no answer before the deadline';
    case 'unreachable':
      return `unreachable (${answer.detail})`;
  }
}

function runOf(answer: Answer): ConformanceOutput | null {
  if (answer.kind !== 'output') return null;
  const value = answer.value as Partial<ConformanceOutput> | null;
  return value && typeof value === 'object' && typeof value.run === 'string' && value.run !== '' ? (value as ConformanceOutput) : null;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function runChecks(client: WorkerClient, options: CheckOptions = {}): Promise<CheckResult[]> {
  const busyMs = options.busyMs ?? 2000;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const lookupTimeoutMs = options.lookupTimeoutMs ?? 2000;
  const id = randomBytes(4).toString('hex');
  const key = (name: string, attempt = 1, tenant = 'conformance') => `${tenant}/chk-${id}-${name}:0:${attempt}`;
  const results = new Map<string, CheckResult>();
  const record = (check: string, rule: string, status: CheckStatus, detail: string) => results.set(check, { id: check, rule, status, detail });
  /** The platform any answer named (the service reads the header from every answer, success or failure). */
  let platform: string | null = null;
  const invoke = async (request: Partial<InvokeRequest> & { key: string | null; input: unknown }) => {
    const answer = await client.invoke({ deadlineMs: timeoutMs, ...request });
    if ((answer.kind === 'output' || answer.kind === 'failure') && answer.platform) platform ??= answer.platform;
    return answer;
  };
  const recordPlatform = () =>
    record(
      'platform',
      'answers name the worker platform (X-Transition-Worker-Platform header / metadata)',
      platform ? 'pass' : 'warn',
      platform ?? 'no answer named a platform (DLQ envelopes will show the service’s own)',
    );

  /** Delivers `k` again while the worker says "in progress", as the service does, up to `capMs`. */
  async function settle(k: string, input: unknown, capMs: number): Promise<Answer> {
    const until = Date.now() + capMs;
    for (;;) {
      const answer = await invoke({ key: k, input });
      if (answer.kind !== 'failure' || !answer.failure.inProgress || Date.now() > until) return answer;
      await sleep(Math.min(1000, Math.max(100, answer.failure.retryAfterMs ?? 250)));
    }
  }

  // A call, its replay, other attempts and tenants.
  const first = await invoke({ key: key('basic'), input: conformance({ echo: { n: 1, text: 'zoë' } }) });
  const firstRun = runOf(first);
  record(
    'answers',
    'a call in conformance mode is answered 2xx / OK with JSON output { echo, run }',
    firstRun && isDeepStrictEqual(firstRun.echo, { n: 1, text: 'zoë' }) ? 'pass' : 'fail',
    describe(first),
  );
  if (first.kind === 'output' && !firstRun) {
    // An answer, but not the conformance one: the worker ran its ordinary handler. Every other point would fail for that one reason.
    record(
      'answers',
      'a call in conformance mode is answered 2xx / OK with JSON output { echo, run }',
      'fail',
      `the worker ignored the conformance input (answered ${describe(first)}, without { echo, run }): start it in conformance mode (docs/transition-workers.md, "Conformance mode")`,
    );
    recordPlatform();
    for (const check of CHECK_IDS) if (!results.has(check)) record(check, '', 'skip', 'not checked: the worker is not in conformance mode');
    return CHECK_IDS.map((check) => results.get(check)!);
  }
  const replay = await invoke({ key: key('basic'), input: conformance({ echo: { n: 2 } }) });
  const replayRun = runOf(replay);
  record(
    'replay',
    'a redelivery of a recorded key gets the stored answer; the handler does not run again',
    firstRun && replayRun && isDeepStrictEqual(replayRun, firstRun) ? 'pass' : 'fail',
    replayRun && firstRun && replayRun.run !== firstRun.run ? `the handler ran again: ${describe(replay)}` : describe(replay),
  );
  const nextAttempt = runOf(await invoke({ key: key('basic', 2), input: conformance({ echo: 'attempt 2' }) }));
  record(
    'new-attempt',
    'a new attempt (a new key) runs the handler again',
    nextAttempt && firstRun && nextAttempt.run !== firstRun.run && nextAttempt.echo === 'attempt 2' ? 'pass' : 'fail',
    nextAttempt ? `run ${nextAttempt.run}` : 'no output',
  );
  const otherTenant = runOf(await invoke({ key: key('basic', 1, 'conformance-other'), input: conformance({ echo: 'other tenant' }) }));
  record(
    'tenant-qualified',
    'the same executionId:stepIndex:attempt of another tenant is another transition',
    otherTenant && firstRun && otherTenant.run !== firstRun.run && otherTenant.echo === 'other tenant' ? 'pass' : 'fail',
    otherTenant ? `run ${otherTenant.run}` : 'no output',
  );

  // The disposition lookup.
  if (!client.offersLookup) {
    for (const [check, rule] of [
      ['lookup-before', 'the lookup says not recorded (404 or recorded: false) for a key never sent'],
      ['lookup-after', 'the lookup says recorded: true for a key that was answered'],
      ['lookup-while-busy', 'the lookup says recorded: true while the handler runs'],
    ])
      record(check, rule, 'skip', 'no lookup offered (--no-lookup)');
  } else {
    const before = await client.lookup(key('never-sent'), lookupTimeoutMs)!;
    record(
      'lookup-before',
      'the lookup says not recorded (404 or recorded: false) for a key never sent',
      before.answered && !before.recorded ? 'pass' : 'fail',
      before.answered ? `recorded: ${before.recorded}` : before.detail,
    );
    const after = await client.lookup(key('basic'), lookupTimeoutMs)!;
    record(
      'lookup-after',
      'the lookup says recorded: true for a key that was answered',
      after.answered && after.recorded ? 'pass' : 'fail',
      after.answered ? `recorded: ${after.recorded}${after.state ? `, state ${after.state}` : ''}` : after.detail,
    );
  }

  // Busy: a redelivery while the first delivery's handler runs.
  const busyKey = key('busy');
  let firstSettled = false;
  const busySent = performance.now();
  let firstSettledAt = Infinity;
  const busy = invoke({ key: busyKey, input: conformance({ echo: 'first', sleepMs: busyMs }), deadlineMs: busyMs + timeoutMs }).finally(() => {
    firstSettled = true;
    firstSettledAt = performance.now();
  });
  let seenRecorded: string | null = null;
  if (client.offersLookup) {
    // Only a lookup asked before busyMs had passed since the call was sent can have seen the handler
    // still running (it sleeps busyMs once it started): a later "recorded" may be the stored answer.
    // And only one answered before the first delivery's own answer came back: after it, nothing may be running.
    while (!firstSettled && !seenRecorded && performance.now() - busySent < busyMs) {
      const answer = await client.lookup(busyKey, lookupTimeoutMs)!;
      if (answer.answered && answer.recorded && !firstSettled) seenRecorded = answer.state ?? 'recorded';
      else await sleep(50);
    }
  } else {
    await sleep(Math.floor(busyMs / 3));
  }
  const second = await invoke({ key: busyKey, input: conformance({ echo: 'second' }), deadlineMs: busyMs + timeoutMs });
  const firstAnswer = await busy;
  // The first delivery answered before its conformance sleep could have ended: no handler was running to look up or to collide with.
  const sleptThrough = firstSettledAt - busySent >= busyMs * 0.9;
  const notRunning = `nothing was running: the first delivery answered after ${Math.round(firstSettledAt - busySent)} ms, before its conformance sleep of ${busyMs} ms ended (the worker does not honour sleepMs)`;
  if (client.offersLookup) {
    record(
      'lookup-while-busy',
      'the lookup says recorded: true while the handler runs',
      seenRecorded && sleptThrough ? 'pass' : 'fail',
      !sleptThrough
        ? notRunning
        : seenRecorded
          ? `recorded while running (state ${seenRecorded})`
          : 'the lookup never said recorded while the handler could still be running',
    );
  }
  const third = await settle(busyKey, conformance({ echo: 'third' }), busyMs + timeoutMs);
  const outputs = [firstAnswer, second, third].map(runOf).filter((run): run is ConformanceOutput => run !== null);
  const others = [firstAnswer, second].filter((answer) => runOf(answer) === null);
  const oneRun = outputs.length >= 1 && outputs.every((run) => isDeepStrictEqual(run, outputs[0])) && runOf(third) !== null;
  const onlyInProgress = others.every((answer) => answer.kind === 'failure' && answer.failure.inProgress);
  record(
    'busy-redelivery',
    'a redelivery while the handler runs is answered "in progress" (or waits for the answer); the handler runs once',
    oneRun && onlyInProgress && sleptThrough ? 'pass' : 'fail',
    !sleptThrough
      ? notRunning
      : oneRun && onlyInProgress
        ? second.kind === 'failure'
          ? `answered in progress (${second.status}${second.failure.retryAfterMs != null ? `, Retry-After ${second.failure.retryAfterMs} ms` : ''})`
          : 'waited for the first delivery’s answer'
        : `first: ${describe(firstAnswer)}; redelivery: ${describe(second)}; after: ${describe(third)}`,
  );

  // The caller's deadline: the answer outlives a caller that gave up.
  const lateKey = key('deadline');
  const abandoned = await invoke({
    key: lateKey,
    input: conformance({ echo: 'abandoned', sleepMs: busyMs }),
    deadlineMs: Math.max(200, Math.floor(busyMs / 4)),
  });
  if (abandoned.kind !== 'deadline') {
    record(
      'caller-deadline',
      'a handler whose caller gave up at its deadline still records its answer; a redelivery gets it',
      'fail',
      `answered before the conformance sleep: ${describe(abandoned)}`,
    );
  } else {
    const late = await settle(lateKey, conformance({ echo: 'redelivered' }), busyMs + timeoutMs);
    const lateRun = runOf(late);
    record(
      'caller-deadline',
      'a handler whose caller gave up at its deadline still records its answer; a redelivery gets it',
      lateRun?.echo === 'abandoned' ? 'pass' : 'fail',
      lateRun?.echo === 'redelivered' ? 'the handler ran again for the redelivery: the first run was lost with its caller' : describe(late),
    );
  }

  // Problems.
  const rejected = await invoke({ key: key('reject'), input: conformance({ fail: REJECTION }) });
  // What the service records: the worker's code and detail (read from a problem only), not retried.
  const rejectionOk =
    rejected.kind === 'failure' &&
    !rejected.failure.retryable &&
    !rejected.failure.inProgress &&
    rejected.failure.errorCode === REJECTION.code &&
    rejected.failure.errorMessage.includes(REJECTION.detail);
  record(
    'problem-rejection',
    'a rejection is a problem (problem+json / x-transition-problem) with code, detail and retryable: false',
    rejectionOk ? 'pass' : 'fail',
    rejected.kind === 'failure' && !rejected.problem ? `${describe(rejected)}, not marked as a problem` : describe(rejected),
  );
  const unavailable = await invoke({ key: key('unavailable'), input: conformance({ fail: UNAVAILABLE }) });
  // What the service does with it: retries the step (a problem with retryable: true, or a retryable status such as 503, as the transports read it).
  const retryableOk = unavailable.kind === 'failure' && unavailable.failure.retryable && !unavailable.failure.inProgress;
  record(
    'problem-retryable',
    'a retryable failure is answered so the service retries it (a problem with retryable: true, or a retryable status)',
    retryableOk ? 'pass' : 'fail',
    retryableOk && !unavailable.problem
      ? `${describe(unavailable)}: retried, under the status's code (a problem with code ${UNAVAILABLE.code} would name it)`
      : describe(unavailable),
  );

  // Keys.
  const noKey = await invoke({ key: null, input: conformance({ echo: 'no key' }) });
  const badKey = await invoke({ key: 'not-a-transition-key', input: conformance({ echo: 'bad key' }) });
  const refused = (answer: Answer) => answer.kind === 'failure' && !answer.failure.retryable && !answer.failure.inProgress;
  record(
    'key-required',
    'a call without a tenant-qualified Idempotency-Key is refused, non-retryable, the handler not run',
    refused(noKey) && refused(badKey) ? 'pass' : 'fail',
    `no key: ${describe(noKey)}; malformed key: ${describe(badKey)}`,
  );

  // Trace context.
  const traceId = randomBytes(16).toString('hex');
  const traced = await invoke({
    key: key('trace'),
    input: conformance({ echo: 'traced' }),
    traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
    tracestate: 'conformance=1',
  });
  const garbled = await invoke({ key: key('trace-garbled'), input: conformance({ echo: 'garbled' }), traceparent: 'not-a-traceparent' });
  const tracedRun = runOf(traced);
  const echoed = tracedRun?.traceId;
  record(
    'traceparent',
    'a W3C traceparent is accepted (and continued, when the answer reports traceId); a malformed one is ignored, not refused',
    tracedRun && runOf(garbled) && (echoed === undefined || echoed === traceId) ? 'pass' : 'fail',
    !tracedRun
      ? `with traceparent: ${describe(traced)}`
      : !runOf(garbled)
        ? `with a malformed traceparent: ${describe(garbled)}`
        : echoed === undefined
          ? 'accepted (the answer reports no traceId)'
          : echoed === traceId
            ? 'continued: the answer reports the trace id sent'
            : `the answer reports trace id ${echoed}, not ${traceId}`,
  );

  recordPlatform();
  return CHECK_IDS.map((check) => results.get(check)).filter((result): result is CheckResult => result !== undefined);
}
