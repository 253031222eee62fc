/**
 * Each table's row mapper, without a database: a row as the drivers hand it back maps to its
 * domain object, and a row whose column does not match (a JSON column above all) is a
 * StoredValueError naming the table, the row and the column, never a silent cast.
 */
import { describe, expect, it } from 'vitest';
import { StoredValueError } from '../errors';
import { readRow } from './columns';
import { toEffect } from './effect-store';
import { toRecord } from './execution-store';
import { FailureGroupColumns } from './failure-group-store';
import { HistoryColumns } from './history-store';
import { JobCountColumns, RedriveJobItemColumns, toJob } from './redrive-job-store';
import { CheckpointOutboxColumns, ExecutionDispatchColumns, ExecutionDlqColumns, ItemRejectColumns, PipelineDefinitionColumns, startView } from './rows';

const at = new Date('2026-12-02T12:00:00.000Z');
const REMOTE_CALL = {
  transitionKey: 'e-1:2:1',
  protocol: 'REST',
  target: 'http://ledger/charge',
  startedAt: '2026-12-02T11:59:00Z',
  deadlineMs: 30000,
  elapsedMs: 30004,
};
const SIGNATURE = { step: 'charge', errorCode: 'LEDGER_DOWN', terminalReason: 'retry_exhausted', transport: 'REST', message: 'ledger refused' };
const ENVELOPE = {
  tenantId: 'acme',
  executionId: 'e-1',
  executionKey: null,
  transitionKey: 'e-1:2:1',
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

const RECORD_ROW = {
  tenant_id: 'acme',
  execution_id: 'e-1',
  execution_key: null,
  pipeline: 'orders',
  pipeline_version: 2,
  definition_fingerprint: 'f00d',
  workflow_id: 'pipeline/acme/e-1',
  status: 'REMOTE_OUTCOME_UNKNOWN',
  version: 7,
  step_count: 3,
  current_step_index: 2,
  attempt: 1,
  failed_step_index: 2,
  segment_input: { order: 1 },
  next_due_at: null,
  run_id: 'run-1',
  redrive_count: 0,
  correlation_id: null,
  resource_type: null,
  resource_name: null,
  terminal_reason: null,
  last_error_code: 'TIMEOUT',
  last_error_message: 'no answer',
  remote_call: REMOTE_CALL,
  created_at: at,
  updated_at: at,
  admission_id: null,
  forked_from: { executionId: 'e-0', stepIndex: 1, version: 4, principal: 'ops', reason: 'fix', repair: null, at: at.toISOString() },
  // a column the mapper does not read (SELECT *) is left out, not refused
  dispatch_id: 'start',
};

/** The StoredValueError `fn` throws, as table, row, field and message. */
function refusal(fn: () => unknown): { table: unknown; row: unknown; field: unknown; message: string } {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(StoredValueError);
    const { extra, message } = err as StoredValueError;
    return { ...(extra as { table: unknown; row: unknown; field: unknown }), message };
  }
  throw new Error('the row was accepted');
}

describe('execution_record (toRecord)', () => {
  it('maps a row, its remote call and its lineage parsed', () => {
    const record = toRecord(RECORD_ROW);
    expect(record).toMatchObject({ tenantId: 'acme', executionId: 'e-1', status: 'REMOTE_OUTCOME_UNKNOWN', version: 7, remoteCall: REMOTE_CALL });
    expect(record.forkedFrom).toEqual({ executionId: 'e-0', stepIndex: 1, version: 4 });
    expect(record.createdAt).toBe(at.toISOString());
  });

  it('refuses a remote_call or forked_from that does not parse, and a status that is not a spec word, naming the column', () => {
    expect(refusal(() => toRecord({ ...RECORD_ROW, remote_call: { ...REMOTE_CALL, deadlineMs: '30s' } }))).toEqual({
      table: 'execution_record',
      row: 'acme/e-1',
      field: 'remote_call',
      message: 'execution_record acme/e-1: the stored remote_call no longer parses (deadlineMs: Invalid input: expected number, received string)',
    });
    expect(refusal(() => toRecord({ ...RECORD_ROW, forked_from: { executionId: 'e-0' } })).field).toBe('forked_from');
    expect(refusal(() => toRecord({ ...RECORD_ROW, status: 'DONE' })).field).toBe('status');
    expect(refusal(() => toRecord({ ...RECORD_ROW, version: undefined })).field).toBe('version');
    expect(refusal(() => toRecord(undefined))).toMatchObject({ table: 'execution_record', row: '(not a row)' });
  });
});

describe('execution_dispatch (workflow_args)', () => {
  const row = {
    tenant_id: 'acme',
    execution_id: 'e-1',
    dispatch_id: 'r-1',
    status: 'PENDING',
    workflow_args: { redrive: { redriveId: 'r-1', intent: 'FAILED', jobId: 'j-1' }, by: { principal: 'ops', reason: 'retry' }, trace: { traceparent: '00-x' } },
    attempts: 1,
    lease_owner: null,
    lease_until: null,
    run_id: null,
    last_error: null,
    created_at: at,
    started_at: null,
  };

  it('parses the dispatch spec and the start view', () => {
    expect(readRow('execution_dispatch', ExecutionDispatchColumns, row).workflow_args?.redrive).toEqual({ redriveId: 'r-1', intent: 'FAILED', jobId: 'j-1' });
    expect(readRow('execution_dispatch', ExecutionDispatchColumns, { ...row, workflow_args: null }).workflow_args).toBeNull();
    expect(startView(row)).toEqual({ dispatchId: 'r-1', requestedAt: at.toISOString(), startAttempts: 1, lastError: null });
  });

  it('refuses a spec whose re-drive intent is not a mode, naming workflow_args and the path in it', () => {
    const bad = { ...row, workflow_args: { redrive: { redriveId: 'r-1', intent: 'SOMETIMES' } } };
    const refused = refusal(() => readRow('execution_dispatch', ExecutionDispatchColumns, bad));
    expect(refused).toMatchObject({ table: 'execution_dispatch', row: 'acme/e-1/r-1', field: 'workflow_args' });
    expect(refused.message).toMatch(/no longer parses \(redrive\.intent: /);
    expect(refusal(() => startView({ ...row, attempts: 'one' })).field).toBe('attempts');
  });
});

describe('command_effect (toEffect)', () => {
  const row = {
    tenant_id: 'acme',
    execution_id: 'e-1',
    step_index: 1,
    step_name: 'charge',
    status: 'SUCCEEDED',
    attempt: 1,
    transition_key: 'e-1:1:1',
    result: { charged: 10 },
    error_code: null,
    created_at: at,
    updated_at: at,
  };
  it('maps a row', () => expect(toEffect(row)).toMatchObject({ stepName: 'charge', status: 'SUCCEEDED', result: { charged: 10 } }));
  it('refuses a status that is not an effect status', () => expect(refusal(() => toEffect({ ...row, status: 'MAYBE' })).field).toBe('status'));
});

describe('execution_dlq (envelope, signature)', () => {
  const row = {
    id: 5,
    tenant_id: 'acme',
    execution_id: 'e-1',
    transition_key: 'e-1:2:1',
    terminal_reason: 'retry_exhausted',
    error_code: 'LEDGER_DOWN',
    record_version: 7,
    envelope: ENVELOPE,
    group_id: '0123456789abcdef',
    signature: SIGNATURE,
    created_at: at,
    published_at: null,
    publish_attempts: 0,
    publish_lease_until: null,
    publish_error: null,
  };
  it('parses the envelope and the signature', () => {
    const parsed = readRow('execution_dlq', ExecutionDlqColumns, row);
    expect([parsed.envelope, parsed.signature]).toEqual([ENVELOPE, SIGNATURE]);
  });
  it('refuses an envelope or a signature that does not parse, naming the column', () => {
    expect(refusal(() => readRow('execution_dlq', ExecutionDlqColumns, { ...row, envelope: { ...ENVELOPE, transport: 'PIGEON' } })).field).toBe('envelope');
    const refused = refusal(() => readRow('execution_dlq', ExecutionDlqColumns, { ...row, signature: { step: 'charge' } }));
    expect(refused).toMatchObject({ table: 'execution_dlq', field: 'signature' });
    expect(refused.message).toMatch(/the stored signature no longer parses \(errorCode: /);
  });
});

describe('dlq groups (signature, buckets)', () => {
  const group = { group_id: '0123456789abcdef', signature: SIGNATURE, count: 3, first_seen: at, last_seen: at, buckets: [0, 0, 1, 0, 2, 0] };
  it('parses a group', () => expect(readRow('dlq_group_day', FailureGroupColumns, group).signature).toEqual(SIGNATURE));
  it('refuses a group with no signature', () => {
    expect(refusal(() => readRow('dlq_group_day', FailureGroupColumns, { ...group, signature: null }))).toMatchObject({
      table: 'dlq_group_day',
      row: '0123456789abcdef',
      field: 'signature',
    });
  });
});

describe('pipeline_definition (steps, shape)', () => {
  const row = { pipeline: 'orders', version: 2, fingerprint: 'f00d', steps: ['reserve', 'charge'], shape: null, created_at: at };
  it('parses the steps', () => expect(readRow('pipeline_definition', PipelineDefinitionColumns, row).steps).toEqual(['reserve', 'charge']));
  it('refuses steps that are not a list of names, naming steps', () => {
    const refused = refusal(() => readRow('pipeline_definition', PipelineDefinitionColumns, { ...row, steps: ['reserve', 7] }));
    expect(refused).toMatchObject({ table: 'pipeline_definition', row: 'orders/2', field: 'steps' });
    expect(refused.message).toMatch(/\(1: Invalid input: expected string, received number\)/);
    expect(refusal(() => readRow('pipeline_definition', PipelineDefinitionColumns, { ...row, shape: [{ name: 'x' }] })).field).toBe('shape');
  });
});

describe('execution history (attempts.evidence and the other tables of one read)', () => {
  const history = {
    runs: [
      { dispatch_id: 'start', status: 'STARTED', run_id: 'run-1', attempts: 1, last_error: null, created_at: at.toISOString(), started_at: at.toISOString() },
    ],
    foreign_runs: [],
    attempts: [
      {
        step_index: 2,
        pipeline_version: 2,
        attempt: 1,
        outcome: 'REMOTE_OUTCOME_UNKNOWN',
        error_code: 'TIMEOUT',
        run_id: 'run-1',
        version: 7,
        evidence: REMOTE_CALL,
        committed_at: '2026-12-02T12:00:00.123456+00:00',
      },
    ],
    redrives: [],
    envelopes: [],
  };
  it('parses each table, json_agg timestamps included', () => {
    const parsed = readRow('execution_history', HistoryColumns, history, 'acme/e-1');
    expect(parsed.attempts[0].evidence).toEqual(REMOTE_CALL);
    expect(parsed.attempts[0].committed_at.toISOString()).toBe('2026-12-02T12:00:00.123Z');
  });
  it('refuses evidence that does not parse, naming attempts and the element', () => {
    const bad = { ...history, attempts: [{ ...history.attempts[0], evidence: { ...REMOTE_CALL, elapsedMs: null } }] };
    const refused = refusal(() => readRow('execution_history', HistoryColumns, bad, 'acme/e-1'));
    expect(refused).toMatchObject({ table: 'execution_history', row: 'acme/e-1', field: 'attempts' });
    expect(refused.message).toMatch(/\(0\.evidence\.elapsedMs: /);
  });
});

describe('redrive_job (toJob) and its items and counts', () => {
  const job = {
    tenant_id: 'acme',
    job_id: 'j-1',
    status: 'RUNNING',
    principal: 'ops',
    reason: 'ledger back',
    request: { selection: { executionIds: ['e-1'] }, reason: 'ledger back', allowFailed: false },
    batch_size: 50,
    rate_per_second: '10.0',
    canary: null,
    halt_reason: null,
    failure_reason: null,
    control_log: [{ action: 'pause', principal: 'ops', at: at.toISOString() }],
    workflow_started_at: at,
    created_at: at,
    updated_at: at,
    finished_at: null,
    excluded: { REMOTE_OUTCOME_UNKNOWN: 1 },
    halt_on: { failedAgainShare: 0.5, minFinished: 5, remoteOutcomeUnknown: true },
    selected: 1,
    yielding: null,
  };
  it('maps a job, numeric rate and JSON columns parsed', () => {
    expect(toJob(job)).toMatchObject({ jobId: 'j-1', ratePerSecond: 10, started: true, controlLog: job.control_log, excluded: job.excluded, yielding: null });
  });
  it('refuses a control log entry whose action is not a control action, naming control_log', () => {
    const refused = refusal(() => toJob({ ...job, control_log: [{ action: 'explode', principal: 'ops', at: 'now' }] }));
    expect(refused).toMatchObject({ table: 'redrive_job', row: 'acme/j-1', field: 'control_log' });
    expect(refused.message).toMatch(/\(0\.action: /);
    expect(refusal(() => toJob({ ...job, yielding: { rate: 'fast' } })).field).toBe('yielding');
    expect(refusal(() => toJob({ ...job, excluded: { REMOTE_OUTCOME_UNKNOWN: 'one' } })).field).toBe('excluded');
  });
  it("parses each counter shard's skipped_by_code, and refuses one that is not counts by code", () => {
    const counts = {
      job_id: 'j-1',
      selected: 3,
      admitted: 1,
      skipped: 2,
      codes: [{ EXECUTION_NOT_FOUND: 2 }, null],
      succeeded: 1,
      failed_again: 0,
      remote_outcome_unknown: 0,
      first_at: at,
      last_at: at,
      last_admitted_at: null,
    };
    expect(readRow('redrive_job_count', JobCountColumns, counts).codes).toEqual([{ EXECUTION_NOT_FOUND: 2 }, null]);
    const refused = refusal(() => readRow('redrive_job_count', JobCountColumns, { ...counts, codes: [['EXECUTION_NOT_FOUND']] }));
    expect(refused).toMatchObject({ table: 'redrive_job_count', row: 'j-1', field: 'codes' });
    expect(refusal(() => readRow('redrive_job_item', RedriveJobItemColumns.pick({ state: true }), { state: 'LOST' })).field).toBe('state');
  });
});

describe('checkpoint_outbox (records) and item_reject', () => {
  const checkpoint = {
    tenant_id: 'acme',
    handoff_key: 'h-1',
    pipeline: 'orders',
    records: [{ id: 1 }],
    record_count: 1,
    status: 'PENDING',
    attempts: 0,
    next_attempt_at: at,
    lease_owner: null,
    lease_until: null,
    last_error: null,
    execution_id: 'e-1',
    created_at: at,
    admitted_at: null,
  };
  it('parses the records, and refuses records that are not a list', () => {
    expect(readRow('checkpoint_outbox', CheckpointOutboxColumns, checkpoint).records).toEqual([{ id: 1 }]);
    expect(refusal(() => readRow('checkpoint_outbox', CheckpointOutboxColumns, { ...checkpoint, records: { id: 1 } }))).toMatchObject({
      table: 'checkpoint_outbox',
      row: 'acme/e-1/h-1',
      field: 'records',
    });
  });

  const reject = {
    id: '12',
    tenant_id: 'acme',
    execution_id: 'e-1',
    transition_key: 'e-1:1:1',
    ordinal: 0,
    step: 'validate',
    item_key: 'sku-1',
    error_code: 'BAD_SKU',
    reason: 'unknown sku',
    fingerprint: 'abc',
    created_at: at,
  };
  it('reads an int8 id given as text, and refuses a timestamp that is not one', () => {
    expect(readRow('item_reject', ItemRejectColumns, reject).id).toBe(12);
    expect(refusal(() => readRow('item_reject', ItemRejectColumns, { ...reject, created_at: 'yesterday' })).field).toBe('created_at');
  });
});
