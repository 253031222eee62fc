/**
 * Long-lived JSON read back through the contract's schemas (issue 21): a DLQ envelope or a
 * parked execution's remote call that no longer parses (written before a schema changed, or
 * by hand) is an error naming the table, the row and the field, never a silent cast; a
 * well-formed one reads as before. Real Postgres; rows written with SQL, as an old release
 * or an operator would have left them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DlqStore } from '../../src/store/dlq-store';
import { ExecutionStore } from '../../src/store/execution-store';
import { StoredValueError } from '../../src/errors';
import { startTestEngine, type TestEngine } from '../helpers/engine';

let engine: TestEngine;

const ENVELOPE = {
  tenantId: 'acme',
  executionId: 'old-1',
  executionKey: null,
  transitionKey: 'old-1:1:1',
  correlationId: null,
  resourceType: null,
  resourceName: null,
  transport: 'REST',
  platform: 'temporal',
  terminalStatus: 'FAILED',
  createdAtEpochMs: 1_764_000_000_000,
  terminalReason: 'retry_exhausted',
  errorCode: 'LEDGER_DOWN',
  errorMessage: 'ledger refused',
  retryable: true,
  retriesObserved: 5,
};
const REMOTE_CALL = {
  transitionKey: 'old-2:2:1',
  protocol: 'REST',
  target: 'http://ledger/charge',
  startedAt: '2026-11-20T12:00:00Z',
  deadlineMs: 30000,
  elapsedMs: 30004,
};

async function record(executionId: string, status: string, remoteCall: unknown): Promise<void> {
  await engine.service.db.query(
    `INSERT INTO execution_record (tenant_id, execution_id, pipeline, workflow_id, status, version, step_count, current_step_index, attempt, failed_step_index, terminal_reason, last_error_code, remote_call)
     VALUES ('acme', $1, 'p', 'pipeline/acme/' || $1, $2, 3, 2, 1, 1, 1, CASE WHEN $2 = 'FAILED' THEN 'retry_exhausted' END, 'LEDGER_DOWN', $3::jsonb)`,
    [executionId, status, remoteCall === null ? null : JSON.stringify(remoteCall)],
  );
}

async function envelope(executionId: string, stored: unknown): Promise<number> {
  const result = await engine.service.db.query<{ id: number }>(
    `INSERT INTO execution_dlq (tenant_id, execution_id, transition_key, terminal_reason, error_code, record_version, envelope)
     VALUES ('acme', $1, $1 || ':1:1', 'retry_exhausted', 'LEDGER_DOWN', 3, $2::jsonb) RETURNING id`,
    [executionId, JSON.stringify(stored)],
  );
  return Number(result.rows[0].id);
}

beforeAll(async () => {
  engine = await startTestEngine([], {}, { worker: false });
});
afterAll(async () => {
  await engine?.stop();
});

describe('stored JSON parsed on read', () => {
  it('a well-formed envelope and remote call read as they were written', async () => {
    await record('old-1', 'FAILED', null);
    await envelope('old-1', ENVELOPE);
    await record('old-2', 'REMOTE_OUTCOME_UNKNOWN', REMOTE_CALL);
    const page = await new DlqStore(engine.service.db).list('acme', { limit: 10 });
    expect(page.entries.map((entry) => entry.envelope)).toEqual([ENVELOPE]);
    expect((await new ExecutionStore(engine.service.db).get('acme', 'old-2'))?.remoteCall).toEqual(REMOTE_CALL);
  });

  it('an envelope that no longer parses is an error naming the row, and the API answers 500 INTERNAL with table, row and field', async () => {
    const { retriesObserved: _dropped, ...older } = ENVELOPE;
    const id = await envelope('old-3', { ...older, executionId: 'old-3', transport: 'CARRIER_PIGEON' });
    const error = await new DlqStore(engine.service.db).list('acme', { limit: 10 }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(StoredValueError);
    expect((error as StoredValueError).message).toMatch(
      new RegExp(`^execution_dlq ${id}: the stored envelope no longer parses \\((transport|retriesObserved): `),
    );
    const res = await engine.request('GET', '/admin/tenants/acme/dlq');
    const body = await res.json();
    expect([res.status, body.code, body.table, body.row, body.field]).toEqual([500, 'INTERNAL', 'execution_dlq', String(id), 'envelope']);
  });

  it('a remote call that no longer parses is an error naming the execution', async () => {
    await record('old-4', 'REMOTE_OUTCOME_UNKNOWN', { ...REMOTE_CALL, deadlineMs: '30s' });
    const error = await new ExecutionStore(engine.service.db).get('acme', 'old-4').catch((err: unknown) => err);
    expect(error).toBeInstanceOf(StoredValueError);
    expect((error as StoredValueError).message).toBe(
      'execution_record acme/old-4: the stored remote_call no longer parses (deadlineMs: Invalid input: expected number, received string)',
    );
    expect((error as StoredValueError).extra).toEqual({ table: 'execution_record', row: 'acme/old-4', field: 'remote_call' });
  });
});
