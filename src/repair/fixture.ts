/**
 * A production failure as a test fixture (`GET …/executions/{e}/fixture`, `pipeline-admin
 * executions fixture <id>`): one JSON document with the pipeline, its pinned version, the failed
 * step and its input, each committed attempt's error code (the last one's message too: the store
 * keeps one message per execution), the remote call's metadata, and every corrected input sent to
 * it. Payload values go only to a token allowed to read them (readPayloads), and only where the
 * codec can open them: otherwise the answer is a refusal saying why, never a fixture with holes.
 * The testing module's `fromFixture(file)` replays it (src/testing/fixture.ts).
 */
import { ForbiddenError, PipelineError } from '../errors';
import { transitionKey } from '../ids';
import type { Principal } from './principal';
import type { PipelineRegistry } from '../pipeline/registry';
import type { ExecutionRecord } from '../store/execution-store';
import type { HistoryStore } from '../store/history-store';
import { CodecError, type AesGcmCodec } from '../temporal/codec';
import { openSent, type RepairAudit } from './correct-input';

/** The fixture document's format; `fromFixture` refuses any other. */
export const FIXTURE_FORMAT = 'pipeline-orchestrator/fixture@1';

export interface ExecutionFixture {
  format: typeof FIXTURE_FORMAT;
  tenantId: string;
  executionId: string;
  pipeline: string;
  pipelineVersion: number;
  definitionFingerprint: string | null;
  status: ExecutionRecord['status'];
  terminalReason: ExecutionRecord['terminalReason'];
  failedStep: { index: number; name: string | null };
  /** the failed step's persisted input */
  input: unknown;
  attempts: {
    stepIndex: number;
    attempt: number;
    transitionKey: string;
    outcome: string;
    errorCode: string | null;
    errorMessage?: string;
    evidence?: unknown;
  }[];
  /** REMOTE_OUTCOME_UNKNOWN: the call whose outcome is unknown (protocol, target, elapsed; no payload) */
  remoteCall: ExecutionRecord['remoteCall'];
  /** corrected inputs sent by re-drives, opened */
  corrections: { redriveId: string; principal: string; kind: string; changedPaths: string[]; sent: unknown }[];
}

export async function executionFixture(
  record: ExecutionRecord,
  caller: Principal,
  deps: { history: HistoryStore; registry: PipelineRegistry; codec?: AesGcmCodec },
): Promise<ExecutionFixture> {
  if (!caller.readPayloads)
    throw new ForbiddenError('a fixture holds payload values: it needs a token with readPayloads (pipeline.auth.tokens), which this one lacks');
  if (record.status !== 'FAILED' && record.status !== 'REMOTE_OUTCOME_UNKNOWN')
    throw new PipelineError(
      `execution ${record.executionId} is ${record.status}: a fixture is taken from a FAILED or REMOTE_OUTCOME_UNKNOWN execution`,
      'EXECUTION_NOT_FAILED',
    );
  const rows = await deps.history.history(record.tenantId, record.executionId);
  const failedIndex = record.failedStepIndex ?? record.currentStepIndex;
  const names = deps.registry.find(record.pipeline, record.pipelineVersion)?.steps.map((step) => step.name);
  const last = rows.attempts.at(-1);
  const corrections = [];
  for (const row of rows.redrives) {
    const repair = (row as { repair?: RepairAudit | null }).repair;
    if (!repair) continue;
    let sent: unknown;
    try {
      sent = await openSent(repair.sent, deps.codec);
    } catch (err) {
      if (err instanceof CodecError || err instanceof PipelineError)
        throw new PipelineError(`re-drive ${row.redrive_id}'s corrected input cannot be opened here: ${err.message}`, 'PAYLOAD_UNREADABLE');
      throw err;
    }
    corrections.push({ redriveId: row.redrive_id, principal: row.principal, kind: repair.kind, changedPaths: repair.changedPaths, sent });
  }
  return {
    format: FIXTURE_FORMAT,
    tenantId: record.tenantId,
    executionId: record.executionId,
    pipeline: record.pipeline,
    pipelineVersion: record.pipelineVersion,
    definitionFingerprint: record.definitionFingerprint,
    status: record.status,
    terminalReason: record.terminalReason,
    failedStep: { index: failedIndex, name: names?.[failedIndex] ?? null },
    input: record.segmentInput,
    attempts: rows.attempts.map((row) => ({
      stepIndex: row.step_index,
      attempt: row.attempt,
      transitionKey: transitionKey(record.executionId, row.step_index, row.attempt),
      outcome: row.outcome,
      errorCode: row.error_code,
      ...(row === last && record.lastErrorMessage ? { errorMessage: record.lastErrorMessage } : {}),
      ...(row.evidence ? { evidence: row.evidence } : {}),
    })),
    remoteCall: record.remoteCall,
    corrections,
  };
}
