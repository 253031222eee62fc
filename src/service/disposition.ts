/**
 * What an operator needs to decide a REMOTE_OUTCOME_UNKNOWN execution: the call's
 * transition identity, target, start time and deadline, and, where the worker offers a
 * lookup (the worker kit does), whether it recorded that identity. Read-only: the
 * service never reconciles or resurrects on its own; the operator decides.
 * The lookup's wire rules (404 / NOT_FOUND = not recorded) are in transports/lookup.ts.
 */
import type { StepDefinition } from '../pipeline/define';
import type { PipelineRegistry } from '../pipeline/registry';
import type { ExecutionRecord, RemoteCall } from '../store/execution-store';
import { ConflictError, PipelineError } from '../errors';
import { idempotencyKey } from '../ids';
import { askLookup, type LookupTarget } from '../transports/lookup';

const RECORDED = 'the worker recorded this transition identity: the effect may have happened; do not re-drive as NOT_APPLIED without checking';
const NOT_RECORDED = 'the worker has no record of this transition identity';

export interface DispositionEvidence extends RemoteCall {
  /** ANSWERED: the worker said; NOT_OFFERED: the step names no lookup; UNAVAILABLE: the lookup failed */
  lookup: 'ANSWERED' | 'NOT_OFFERED' | 'UNAVAILABLE';
  /** whether the worker recorded the transition identity; null when unknown */
  workerRecorded: boolean | null;
  workerState: string | null;
  detail: string;
}

/**
 * The worker's own record, read live where it offers a lookup. When the execution parked
 * on the worker's "in progress" answers and the lookup cannot answer (not offered, or
 * down with the store that kept the outcome from being written), those answers are the
 * evidence: the worker took the call (`workerRecorded: true`, state IN_PROGRESS).
 */
export async function dispositionEvidence(
  record: ExecutionRecord,
  registry: PipelineRegistry,
  options: EvidenceOptions = {},
): Promise<DispositionEvidence | null> {
  const found = await liveEvidence(record, options.step ?? failedStep(record, registry), options.timeoutMs ?? 2000);
  if (!found) return null;
  const { notFound, ...live } = found;
  const answered = record.remoteCall?.inProgress;
  // A lookup's explicit answer wins, but not a bare 404 / NOT_FOUND: a wrong lookup URL says that
  // too, and the worker's own "in progress" answers say it took the call.
  // Deliveries that got no answer prove nothing about the worker: only its own "in progress" does.
  if (!answered || answered.state !== 'IN_PROGRESS' || (live.lookup === 'ANSWERED' && !notFound)) return live;
  return {
    ...live,
    workerRecorded: true,
    workerState: answered.state,
    detail: `the worker answered "in progress" ${answered.answers} times for this transition identity (last at ${answered.lastAt}): it took the call and its outcome was not stored; the effect may have happened. Its lookup: ${live.detail}`,
  };
}

/**
 * Where the evidence checks find the failed step's worker. `step`: the step as a re-drive
 * resolved it (under resumeUnderCurrentVersion, the same-named step of the current version:
 * the pinned version may be gone, and its worker is the one the re-drive calls); default the
 * pinned definition's. `timeoutMs`: each lookup's deadline.
 */
export interface EvidenceOptions {
  step?: StepDefinition;
  timeoutMs?: number;
}

/** The failed (or parked) step of the record, in the definition it is pinned to. */
export function failedStep(record: ExecutionRecord, registry: PipelineRegistry): StepDefinition | undefined {
  return record.failedStepIndex !== null ? registry.find(record.pipeline, record.pipelineVersion)?.steps[record.failedStepIndex] : undefined;
}

/** Where a remote step's worker answers the disposition lookup, or null when it offers none (or the step is not remote). */
export function lookupTargetOf(step: StepDefinition | undefined): LookupTarget | null {
  if (step?.transport === 'GRPC' && step.grpc.lookup) return { protocol: 'GRPC', address: step.grpc.address };
  if (step?.transport === 'REST' && step.rest.dispositionUrl) return { protocol: 'REST', urlTemplate: step.rest.dispositionUrl };
  return null;
}

async function liveEvidence(
  record: ExecutionRecord,
  step: StepDefinition | undefined,
  timeoutMs: number,
): Promise<(DispositionEvidence & { notFound?: true }) | null> {
  const call = record.remoteCall;
  if (record.status !== 'REMOTE_OUTCOME_UNKNOWN' || !call) return null;
  // The worker dedupes on the key it was sent: the tenant-qualified one.
  const key = idempotencyKey(record.tenantId, call.transitionKey);
  const target = lookupTargetOf(step);
  if (!target)
    return {
      ...call,
      lookup: 'NOT_OFFERED',
      workerRecorded: null,
      workerState: null,
      detail: 'the worker offers no lookup endpoint; check its logs and the domain side',
    };
  const answer = await askLookup(target, key, timeoutMs);
  if (!answer.answered) return { ...call, lookup: 'UNAVAILABLE', workerRecorded: null, workerState: null, detail: answer.detail };
  return {
    ...call,
    lookup: 'ANSWERED',
    workerRecorded: answer.recorded,
    workerState: answer.state,
    detail: answer.recorded ? RECORDED : answer.notFound ? `${NOT_RECORDED} (its lookup answered not found)` : NOT_RECORDED,
    ...(answer.notFound ? { notFound: true as const } : {}),
  };
}

/**
 * `DISPOSITION_CONTRADICTED`: an operator's `NOT_APPLIED` attestation is
 * checked against the worker's own record before a REMOTE_OUTCOME_UNKNOWN re-drive is
 * admitted. Recorded → 409 with the evidence; lookup offered but unreachable → 503 with
 * what failed (no guess either way); no lookup offered → the attestation stands.
 * `override` (the request's audited `overrideEvidence: true`) passes both.
 */
export async function checkDispositionAttestation(
  record: ExecutionRecord,
  registry: PipelineRegistry,
  override: boolean,
  options: EvidenceOptions = {},
): Promise<DispositionEvidence | null> {
  const evidence = await dispositionEvidence(record, registry, options);
  if (!evidence || override) return evidence;
  if (evidence.workerRecorded === true) {
    throw new ConflictError(
      `the worker recorded transition ${evidence.transitionKey} (state ${evidence.workerState ?? 'unknown'}): the original invocation may have made its effect, which contradicts "confirmedDisposition": "NOT_APPLIED". Check the domain side; to re-drive anyway send "overrideEvidence": true (audited)`,
      'DISPOSITION_CONTRADICTED',
      { evidence },
    );
  }
  if (evidence.lookup === 'UNAVAILABLE') {
    throw new PipelineError(
      `the worker's lookup could not confirm or contradict "NOT_APPLIED" (${evidence.detail}); try again, or send "overrideEvidence": true (audited) to re-drive on your attestation alone`,
      'DISPOSITION_EVIDENCE_UNAVAILABLE',
      { evidence },
    );
  }
  return evidence;
}
