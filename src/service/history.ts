/**
 * An execution's story for engineers and operators: every run (which dispatch started
 * it, when), every committed attempt of every step with its outcome and error code, every
 * re-drive with principal, reason, mode and the bulk job that made it, its DLQ envelopes,
 * and, while parked as REMOTE_OUTCOME_UNKNOWN, the disposition evidence. Read from the
 * store: no Temporal call, so it answers while Temporal is down.
 */
import { ExecutionNotFoundError, StoredValueError } from '../errors';
import { isOneOf, REDRIVE_MODES } from '../spec-words';
import { transitionKey } from '../ids';
import type { PipelineRegistry } from '../pipeline/registry';
import type { DefinitionStore } from '../store/definition-store';
import type { ExecutionStore } from '../store/execution-store';
import type { HistoryStore } from '../store/history-store';
import { iso, isoOrNull, startView } from '../store/rows';
import { dispositionEvidence } from './disposition';

export class HistoryService {
  constructor(
    private readonly store: ExecutionStore,
    private readonly history: HistoryStore,
    private readonly definitions: DefinitionStore,
    private readonly registry: PipelineRegistry,
  ) {}

  async story(tenantId: string, executionId: string) {
    const record = await this.store.get(tenantId, executionId);
    if (!record) throw new ExecutionNotFoundError(tenantId, executionId);
    const rows = await this.history.history(tenantId, executionId);
    // Each attempt is named by the definition version it ran under (registered, or as recorded), never by the current one.
    const shapes = new Map<number, string[] | null>();
    for (const version of new Set(rows.attempts.map((row) => row.pipeline_version ?? 1))) {
      const registered = this.registry.find(record.pipeline, version)?.steps.map((step) => step.name);
      shapes.set(version, registered ?? (await this.definitions.find(record.pipeline, version, null))?.steps ?? null);
    }
    const stepName = (index: number, version: number | null) => shapes.get(version ?? 1)?.[index] ?? null;
    return {
      tenantId,
      executionId,
      pipeline: record.pipeline,
      pipelineVersion: record.pipelineVersion,
      status: record.status,
      version: record.version,
      workflowId: record.workflowId,
      runs: rows.runs.map((run) => {
        const start = startView(run);
        return {
          runId: run.run_id,
          dispatchId: start.dispatchId,
          dispatch: run.dispatch_id === 'start' ? ('start' as const) : ('redrive' as const),
          status: run.status,
          requestedAt: start.requestedAt,
          startedAt: isoOrNull(run.started_at),
          startAttempts: start.startAttempts,
          lastError: start.lastError,
        };
      }),
      // Runs nobody dispatched (a Reset in the Temporal UI, a duplicate start): refused by their first step, which says why.
      refusedRuns: rows.foreign_runs.map((run) => ({
        runId: run.run_id,
        ownerRunId: run.owner_run_id,
        recordStatus: run.record_status,
        refusedAt: iso(run.noticed_at),
        note: run.reason,
      })),
      attempts: rows.attempts.map((row) => ({
        stepIndex: row.step_index,
        step: stepName(row.step_index, row.pipeline_version),
        pipelineVersion: row.pipeline_version ?? 1,
        attempt: row.attempt,
        transitionKey: transitionKey(executionId, row.step_index, row.attempt),
        outcome: row.outcome,
        errorCode: row.error_code,
        runId: row.run_id,
        version: row.version,
        committedAt: iso(row.committed_at),
        ...(row.evidence ? { evidence: row.evidence } : {}),
      })),
      redrives: rows.redrives.map((row) => ({
        redriveId: row.redrive_id,
        principal: row.principal,
        reason: row.reason,
        // The column's CHECK holds it to the modes; a row that says otherwise is a defect to name, not to pass on.
        mode: isOneOf(REDRIVE_MODES, row.mode) ? row.mode : failStored('redrive_audit', row.redrive_id, 'mode', `not a re-drive mode: ${row.mode}`),
        jobId: row.job_id,
        fromStatus: row.from_status,
        fromVersion: row.from_version,
        toVersion: row.to_version,
        fromPipelineVersion: row.from_pipeline_version ?? 1,
        toPipelineVersion: row.to_pipeline_version ?? row.from_pipeline_version ?? 1,
        resumeStepIndex: row.resume_step_index,
        attempt: row.attempt,
        confirmedDisposition: row.confirmed_disposition,
        // A corrected input: which paths, and fingerprints; what was sent stays in the audit row (sealed when the codec is on).
        correctedInput: row.repair
          ? {
              kind: row.repair.kind,
              changedPaths: row.repair.changedPaths,
              beforeFingerprint: row.repair.beforeFingerprint,
              afterFingerprint: row.repair.afterFingerprint,
              summary: `re-driven with a corrected input by ${row.principal}: ${row.repair.changedPaths.join(', ') || 'no path changed'}`,
            }
          : null,
        at: iso(row.created_at),
      })),
      dlq: rows.envelopes.map((row) => ({
        id: row.id,
        transitionKey: row.transition_key,
        terminalReason: row.terminal_reason,
        errorCode: row.error_code,
        groupId: row.group_id,
        recordVersion: row.record_version,
        at: iso(row.created_at),
      })),
      disposition: await dispositionEvidence(record, this.registry),
    };
  }
}

function failStored(table: string, row: string, field: string, why: string): never {
  throw new StoredValueError(table, row, field, why);
}
