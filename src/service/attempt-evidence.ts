/**
 * Evidence before a re-drive of a FAILED execution whose failed step is remote. A FAILED
 * remote step may still have run: its worker may have taken an identity whose answer never
 * came back (a worker that died, before the service kept to "a worker that died is not a
 * worker that failed"; a run terminated while the call was out; a step Temporal gave up).
 * A re-drive creates a new identity, which the worker has never seen: its handler would run
 * again. So the re-drive asks the worker's lookup about the failed step's identities first and
 * is refused (409 WORKER_RECORDED_FAILED_ATTEMPT) with the evidence when the worker recorded
 * one; a lookup that cannot answer is a 503 (DISPOSITION_EVIDENCE_UNAVAILABLE), never a guess.
 * `confirmedDisposition: "NOT_APPLIED"` with `overrideEvidence: true` (audited) passes both.
 * A step whose worker offers no lookup is not checked: there is nothing to ask.
 */
import { ConflictError, PipelineError } from '../errors';
import { idempotencyKey, transitionKey } from '../ids';
import type { PipelineRegistry } from '../pipeline/registry';
import type { ExecutionRecord, ExecutionStore } from '../store/execution-store';
import { askLookup } from '../transports/lookup';
import { failedStep, lookupTargetOf, type EvidenceOptions } from './disposition';

/** The newest identities of the failed step asked about (a step's attempts are few: retry-limit + 1 per run). */
const MAX_IDENTITIES = 20;

/**
 * Codes the service gives a remote attempt that ended without the worker's own answer: such an
 * attempt's identity may have reached the worker. Any other code on the final attempt is the
 * worker's own "not done" (a problem body, a status), which the worker may well have stored
 * (the kit stores a rejection as its outcome): that identity is not evidence of an effect.
 */
const NO_WORKER_ANSWER = new Set([
  'CONNECTION_REFUSED',
  'NETWORK_ERROR',
  'DELIVERY_UNCONFIRMED',
  'TRANSITION_IN_PROGRESS',
  'STEP_ABANDONED',
  'RUN_TERMINATED',
  'RUN_CANCELLED',
  'RUN_TIMED_OUT',
  'GRPC_UNAVAILABLE',
  'GRPC_CANCELLED',
]);

export interface AttemptAnswer {
  transitionKey: string;
  attempt: number;
  /** when the service first sent a delivery of it (null: not noted, from before deliveries were noted) */
  firstSentAt: string | null;
  workerRecorded: boolean | null;
  workerState: string | null;
}

export interface FailedAttemptEvidence {
  lookup: 'ANSWERED' | 'UNAVAILABLE';
  protocol: 'REST' | 'GRPC';
  /** the first identity the worker recorded (or, UNAVAILABLE, the first it could not be asked about) */
  transitionKey: string;
  workerRecorded: boolean | null;
  workerState: string | null;
  /** every identity asked about, newest first */
  identities: AttemptAnswer[];
  detail: string;
}

/** The attempts of the failed step to ask about: every attempt, newest first, but the last one when the worker itself answered it "not done". */
export function attemptsToAsk(record: Pick<ExecutionRecord, 'attempt' | 'terminalReason' | 'lastErrorCode'>): number[] {
  const workerAnswered = record.terminalReason === 'non_retryable' && record.lastErrorCode !== null && !NO_WORKER_ANSWER.has(record.lastErrorCode);
  const attempts: number[] = [];
  for (let a = workerAnswered ? record.attempt - 1 : record.attempt; a >= 1 && attempts.length < MAX_IDENTITIES; a--) attempts.push(a);
  return attempts;
}

/** What the worker's lookup says of the failed step's identities; null when there is nothing to ask (not FAILED at a remote step with a lookup). */
export async function failedAttemptEvidence(
  record: ExecutionRecord,
  registry: PipelineRegistry,
  store: ExecutionStore,
  options: EvidenceOptions = {},
): Promise<FailedAttemptEvidence | null> {
  if (record.status !== 'FAILED' || record.failedStepIndex === null) return null;
  const target = lookupTargetOf(options.step ?? failedStep(record, registry));
  const timeoutMs = options.timeoutMs ?? 2000;
  if (!target) return null;
  const stepIndex = record.failedStepIndex;
  const attempts = attemptsToAsk(record);
  if (attempts.length === 0) return null;
  const sent = new Map((await store.remoteDeliveries(record.tenantId, record.executionId, stepIndex, MAX_IDENTITIES)).map((d) => [d.attempt, d.firstSentAt]));
  const identities: AttemptAnswer[] = [];
  let unavailable: { key: string; detail: string } | null = null;
  await Promise.all(
    attempts.map(async (attempt, i) => {
      const key = transitionKey(record.executionId, stepIndex, attempt);
      const answer = await askLookup(target, idempotencyKey(record.tenantId, key), timeoutMs);
      if (!answer.answered) unavailable ??= { key, detail: answer.detail };
      identities[i] = {
        transitionKey: key,
        attempt,
        firstSentAt: sent.get(attempt) ?? null,
        workerRecorded: answer.answered ? answer.recorded : null,
        workerState: answer.answered ? answer.state : null,
      };
    }),
  );
  const recorded = identities.find((identity) => identity.workerRecorded === true);
  if (recorded)
    return {
      lookup: 'ANSWERED',
      protocol: target.protocol,
      transitionKey: recorded.transitionKey,
      workerRecorded: true,
      workerState: recorded.workerState,
      identities,
      detail: `the worker recorded transition ${recorded.transitionKey} (state ${recorded.workerState ?? 'unknown'}) of the failed step: its handler may have made the effect, and a re-drive runs it again under a new identity`,
    };
  if (unavailable) {
    const { key, detail } = unavailable as { key: string; detail: string };
    return { lookup: 'UNAVAILABLE', protocol: target.protocol, transitionKey: key, workerRecorded: null, workerState: null, identities, detail };
  }
  return {
    lookup: 'ANSWERED',
    protocol: target.protocol,
    transitionKey: identities[0].transitionKey,
    workerRecorded: false,
    workerState: null,
    identities,
    detail: `the worker has no record of the failed step's ${identities.length} identities`,
  };
}

/**
 * The re-drive's check: refuses a FAILED remote step's re-drive when the worker recorded one of
 * its identities (409) or its lookup cannot answer (503). `override`: the request's audited
 * `confirmedDisposition: "NOT_APPLIED"` with `overrideEvidence: true`.
 */
export async function checkFailedAttemptEvidence(
  record: ExecutionRecord,
  registry: PipelineRegistry,
  store: ExecutionStore,
  override: boolean,
  options: EvidenceOptions = {},
): Promise<FailedAttemptEvidence | null> {
  if (override) return null;
  const evidence = await failedAttemptEvidence(record, registry, store, options);
  if (evidence?.workerRecorded === true)
    throw new ConflictError(
      `${evidence.detail}. Check the domain side; if the effect did not happen, send "confirmedDisposition": "NOT_APPLIED" with "overrideEvidence": true (audited)`,
      'WORKER_RECORDED_FAILED_ATTEMPT',
      { evidence },
    );
  if (evidence?.lookup === 'UNAVAILABLE')
    throw new PipelineError(
      `the worker's lookup could not say whether it recorded transition ${evidence.transitionKey} of the failed step (${evidence.detail}); try again, or send "confirmedDisposition": "NOT_APPLIED" with "overrideEvidence": true (audited)`,
      'DISPOSITION_EVIDENCE_UNAVAILABLE',
      { evidence },
    );
  return evidence;
}
