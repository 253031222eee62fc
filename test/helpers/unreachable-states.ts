/**
 * States the engine no longer produces, written straight into the store for the tests of
 * the code that must still handle them (records and effects from older releases, or left
 * by a crash at a point a test cannot stop a process at). Every other state a test needs
 * is reached through the engine itself: a real failure, a real deadline, a terminated run.
 * Each function says why its state cannot be reached that way.
 */
import type { EffectStatus, TerminalReason } from '../../src/spec-words';
import type { Db } from '../../src/store/db';

/**
 * A FAILED record without its failed step index: written by releases before the index was
 * kept. Today every terminal commit sets it in the same statement.
 */
export async function forgetFailedStepIndex(db: Db, tenantId: string, executionId: string): Promise<void> {
  await db.query('UPDATE execution_record SET failed_step_index = NULL WHERE tenant_id = $1 AND execution_id = $2', [tenantId, executionId]);
}

/**
 * A retained Command effect in `status` beside a FAILED record. The engine commits an
 * effect and its record in one statement, so a FAILED record keeps FAILED_RETRYABLE or
 * FAILED_TERMINAL; IN_FLIGHT is what a worker's death mid-call leaves (a process cannot be
 * killed inside a step from an in-process test), SUCCEEDED beside FAILED only an older
 * release's split commit.
 */
export async function setRetainedEffect(db: Db, tenantId: string, executionId: string, status: EffectStatus): Promise<void> {
  await db.query('UPDATE command_effect SET status = $3 WHERE tenant_id = $1 AND execution_id = $2', [tenantId, executionId, status]);
}

/**
 * An execution stalled RUNNING at a Command step whose effect SUCCEEDED with its result,
 * the record never moved past the step: a crash between an effect's commit and its
 * record's, which today are one statement. Ordinary replay must reuse the stored result.
 */
export async function stallAfterEffect(db: Db, tenantId: string, executionId: string, result: unknown): Promise<void> {
  await db.query(`UPDATE command_effect SET status = 'SUCCEEDED', result = $3::jsonb WHERE tenant_id = $1 AND execution_id = $2`, [
    tenantId,
    executionId,
    JSON.stringify(result),
  ]);
  await db.query(
    `UPDATE execution_record SET status = 'RUNNING', failed_step_index = NULL, terminal_reason = NULL WHERE tenant_id = $1 AND execution_id = $2`,
    [tenantId, executionId],
  );
}

/**
 * The record deleted by hand while its run is inside a step (an operator's DELETE, a
 * restore from an older backup). The service deletes only SUCCEEDED records past their
 * retention, never one a run holds; the engine must still end such a run cleanly.
 */
export async function deleteRecordBehindTheEngine(db: Db, tenantId: string, executionId: string): Promise<void> {
  await db.query('DELETE FROM execution_record WHERE tenant_id = $1 AND execution_id = $2', [tenantId, executionId]);
}

/**
 * Worker-kit dedupe rows keyed by the bare transition key, as releases before
 * tenant-qualified keys wrote them: one DONE with a stored response, one IN_PROGRESS.
 * Today's kit writes only `tenant/transitionKey` keys.
 */
export async function legacyDedupeRows(db: Db, done: { key: string; responseBody: unknown }, inProgressKey: string): Promise<void> {
  await db.query(
    `INSERT INTO transition_worker_dedupe (idempotency_key, state, response_status, response_body, completed_at)
     VALUES ($1, 'DONE', 200, $2::jsonb, now()), ($3, 'IN_PROGRESS', NULL, NULL, NULL)`,
    [done.key, JSON.stringify(done.responseBody), inProgressKey],
  );
}

/** A migration recorded by a newer build of the service, which has a file this build lacks. */
export async function migrationFromNewerBuild(db: Db, version: string, name: string): Promise<void> {
  await db.query('INSERT INTO schema_migration (version, name) VALUES ($1, $2)', [version, name]);
}

/**
 * A FAILED execution (version 3, failed at step 1 of 2) and its DLQ envelope in failure
 * group `groupId`, written `age` (a SQL interval) ago. The engine stamps an envelope with
 * the time of its own commit, and a test cannot wait hours or days for one to age.
 */
export async function agedFailure(
  db: Db,
  f: { tenantId: string; executionId: string; groupId: string; terminalReason: TerminalReason; errorCode: string; age: string },
): Promise<void> {
  await db.query(
    `INSERT INTO execution_record (tenant_id, execution_id, pipeline, workflow_id, status, version, step_count, current_step_index, attempt, failed_step_index, terminal_reason, last_error_code)
     VALUES ($1, $2, 'p', $2, 'FAILED', 3, 2, 1, 1, 1, $3, $4)`,
    [f.tenantId, f.executionId, f.terminalReason, f.errorCode],
  );
  await db.query(
    `INSERT INTO execution_dlq (tenant_id, execution_id, transition_key, terminal_reason, error_code, record_version, envelope, created_at, group_id, signature)
     VALUES ($1, $2, $2 || ':1:1', $3, $4, 3, '{}', now() - $5::interval, $6, jsonb_build_object('step', 'charge', 'errorCode', $4::text, 'terminalReason', $3::text, 'transport', 'REST', 'message', 'm'))`,
    [f.tenantId, f.executionId, f.terminalReason, f.errorCode, f.age, f.groupId],
  );
}

/**
 * DLQ envelopes deleted by hand (an operator's DELETE). The service deletes only envelopes
 * re-driven longer ago than their retention; the counters must follow any delete.
 */
export async function deleteEnvelopesByHand(db: Db, tenantId: string, executionIds: string[]): Promise<void> {
  await db.query('DELETE FROM execution_dlq WHERE tenant_id = $1 AND execution_id = ANY($2)', [tenantId, executionIds]);
}

/**
 * Item rejects with one fingerprint deleted by hand (an operator's DELETE). The service
 * deletes rejects only by age; the counters must follow any delete.
 */
export async function deleteRejectsByHand(db: Db, tenantId: string, fingerprint: string): Promise<void> {
  await db.query('DELETE FROM item_reject WHERE tenant_id = $1 AND fingerprint = $2', [tenantId, fingerprint]);
}
