/**
 * The engine's own writers of execution records, as one statement each (created, begun,
 * ending in a step commit, re-driven by the re-drive's admission): for tests of the counters
 * those statements and their triggers keep.
 */
import { expect } from 'vitest';
import type { TerminalReason } from '../../src/spec-words';
import type { Db } from '../../src/store/db';
import { ExecutionStore, type AdmissionGuard, type CommitResult } from '../../src/store/execution-store';
import { AdmissionTooSoonError, jobGate } from '../../src/store/job-gate';

/**
 * The service's own writers of the counted rows: an execution created, begun, ending in a
 * step commit (FAILED with its envelope, REMOTE_OUTCOME_UNKNOWN, or SUCCEEDED with its item
 * rejects) and re-driven by the re-drive's admission, each one statement as the engine
 * makes it. Each commit is for the record's current step and attempt.
 */
export function writers(db: Db) {
  const store = new ExecutionStore(db);
  // The dispatch each record is queued for: 'start', then its latest re-drive's (only that dispatch's run takes it).
  const dispatchOf = new Map<string, string>();
  const key = async (tenantId: string, executionId: string) => {
    const dispatchId = dispatchOf.get(`${tenantId}/${executionId}`) ?? 'start';
    const record = await store.begin({ tenantId, executionId, runId: `run-${executionId}-${dispatchId}`, dispatchId });
    expect(record?.status).toBe('RUNNING');
    const step = { tenantId, executionId, stepIndex: record!.currentStepIndex, attempt: record!.attempt };
    return { step, transitionKey: `${executionId}:${step.stepIndex}:${step.attempt}` };
  };
  const committed = async (commit: Promise<CommitResult>) => expect((await commit).committed).toBe(true);
  return {
    async created(tenantId: string, executionId: string, stepCount = 1, pinned: { pipelineVersion?: number; definitionFingerprint?: string | null } = {}) {
      const execution = {
        tenantId,
        executionId,
        executionKey: null,
        pipeline: 'p',
        workflowId: executionId,
        stepCount,
        input: {},
        correlationId: null,
        ...pinned,
      };
      expect(await store.create({ ...execution, resourceType: null, resourceName: null }, {}, { owner: 'test', ms: 60_000 })).not.toBeNull();
    },
    async failed(tenantId: string, executionId: string, errorCode: string, terminalReason: TerminalReason = 'retry_exhausted') {
      const { step, transitionKey } = await key(tenantId, executionId);
      const failure = { terminalReason, errorCode, errorMessage: 'refused', transitionKey };
      const envelope = { ...failure, tenantId, executionId, transport: 'LOCAL' as const, platform: 'temporal', terminalStatus: 'FAILED' };
      await committed(
        store.commitFailed({
          ...step,
          failure: {
            ...failure,
            step: 's',
            envelope: { ...envelope, createdAtEpochMs: Date.now(), retryable: terminalReason === 'retry_exhausted', retriesObserved: 1 },
          },
        }),
      );
    },
    async outcomeUnknown(tenantId: string, executionId: string) {
      const { step, transitionKey } = await key(tenantId, executionId);
      const remoteCall = { transitionKey, protocol: 'REST', target: 'http://x', startedAt: new Date().toISOString(), deadlineMs: 10, elapsedMs: 11 };
      await committed(store.commitOutcomeUnknown({ ...step, errorCode: 'REMOTE_OUTCOME_UNKNOWN', errorMessage: 'deadline', remoteCall }));
    },
    async succeeded(tenantId: string, executionId: string, rejectFingerprints: string[] = []) {
      const { step, transitionKey } = await key(tenantId, executionId);
      const items = rejectFingerprints.map((fingerprint) => ({ itemKey: null, errorCode: 'BAD', reason: 'r', fingerprint }));
      await committed(store.commitSucceeded({ ...step, output: {}, rejects: items.length > 0 ? { transitionKey, step: 's', items } : undefined }));
    },
    /**
     * `jobId`: admitted as that bulk job's item, through the job's gate (the item turns ADMITTED
     * and is counted in the same statement). Answers false when another admission (another
     * `redriveId`) moved the record first; `mustWin` (default) expects it to win.
     * `jobSpacingMs`: the job's rate (an admission the gate refuses throws AdmissionTooSoonError
     * and changes nothing); without it the spacing is 1 ms and a refusal is waited out.
     */
    async redriven(tenantId: string, executionId: string, options: { jobId?: string; redriveId?: string; mustWin?: boolean; jobSpacingMs?: number } = {}) {
      const record = (await store.get(tenantId, executionId))!;
      // A racing admission that already moved the record (read after it): as the service's own
      // status check would, this one has nothing to re-drive and loses.
      if (record.status !== 'FAILED' && record.status !== 'REMOTE_OUTCOME_UNKNOWN' && !(options.mustWin ?? true)) return false;
      const unknown = record.status === 'REMOTE_OUTCOME_UNKNOWN';
      const redriveId = options.redriveId ?? `redrive-${executionId}-${record.version}`;
      const admit = <G extends Record<string, unknown>>(guard?: AdmissionGuard<G>) =>
        store.admitRedrive(
          {
            tenantId,
            executionId,
            expectedVersion: record.version,
            fromStatus: record.status,
            fromPipelineVersion: record.pipelineVersion,
            resumeStepIndex: record.failedStepIndex!,
            resumeStepName: 's',
            redriveId,
            principal: 'ops',
            reason: 'test',
            request: {},
            mode: unknown ? 'REMOTE_OUTCOME_UNKNOWN' : 'FAILED',
            confirmedDisposition: unknown ? 'NOT_APPLIED' : null,
            dispatchSpec: {},
            releaseAmbiguousEffect: unknown,
            lease: { owner: 'test', ms: 60_000 },
            jobId: options.jobId,
          },
          guard,
        );
      const { jobId } = options;
      let admitted: Awaited<ReturnType<typeof admit>> = null;
      if (jobId === undefined) admitted = await admit();
      else
        for (;;) {
          try {
            admitted = await admit(jobGate({ tenantId, jobId, executionId, redriveId, spacingMs: options.jobSpacingMs ?? 1 }));
            break;
          } catch (err) {
            if (!(err instanceof AdmissionTooSoonError) || options.jobSpacingMs !== undefined) throw err;
            await new Promise((resolve) => setTimeout(resolve, err.waitMs));
          }
        }
      if (options.mustWin ?? true) expect(admitted?.status).toBe('QUEUED');
      if (admitted) dispatchOf.set(`${tenantId}/${executionId}`, redriveId);
      return admitted !== null;
    },
  };
}
