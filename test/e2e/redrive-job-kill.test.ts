/**
 * A bulk re-drive job survives the death of the service process that runs it: the service
 * (API + worker, its own process) is SIGKILLed mid-job and started again; the job goes on
 * from where it was, and every selected execution is admitted exactly once (one audit row,
 * one new Temporal run, one ledger booking each), none lost.
 */
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ExecutionStore } from '../../src/store/execution-store';
import { ADMIN_TOKEN, TEST_TOKENS } from '../helpers/engine';
import { startFixture } from '../helpers/fixture-process';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';
import { until } from '../helpers/until';

const EXECUTIONS = 30;
/** The service is killed once this many items are admitted. */
const KILL_AFTER = 10;

let database: TestDatabase;
let taskQueue: string;
const children: ChildProcess[] = [];

async function startService(): Promise<{ child: ChildProcess; url: string }> {
  const service = await startFixture(
    'test/fixtures/job-service-process.ts',
    {
      DATABASE_URL: database.url,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      PIPELINE_TEMPORAL_TASK_QUEUE: taskQueue,
      PIPELINE_SERVER_PORT: '0',
      PIPELINE_AUTH_TOKENS: JSON.stringify(TEST_TOKENS),
      PIPELINE_SWEEPER_INTERVAL: '500ms',
      PIPELINE_ORCHESTRATOR_WORKER_HEARTBEAT_TIMEOUT: '2s',
      PIPELINE_TEMPORAL_CALL_TIMEOUT: '30s',
      PIPELINE_SHUTDOWN_GRACE_PERIOD: '5s',
    },
    /ready \d+ port (\d+)\n/,
    90_000,
    'the service process to start',
  );
  children.push(service.child);
  return { child: service.child, url: `http://127.0.0.1:${service.match[1]}/pipeline` };
}

async function call(url: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json();
  if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

async function stopped(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  await exited;
}

beforeAll(async () => {
  database = await createTestDatabase();
  taskQueue = `job-kill-${process.pid}-${Date.now()}`;
  await database.db.query(`CREATE TABLE test_ledger_state (down boolean NOT NULL)`);
  await database.db.query(`INSERT INTO test_ledger_state VALUES (true)`);
  await database.db.query(`CREATE TABLE test_ledger_booking (execution_id text NOT NULL, transition_key text PRIMARY KEY, pid integer NOT NULL)`);
});

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await database?.drop();
});

describe('a bulk re-drive job and a killed service', () => {
  it('goes on after a SIGKILL mid-job: every item admitted exactly once, none lost', async () => {
    // The ledger is down: every execution fails into one failure group.
    const service = await startService();
    const ids = Array.from({ length: EXECUTIONS }, (_, i) => `book-${i}`);
    for (const executionId of ids)
      await call(service.url, 'POST', '/api/tenants/acme/executions', { pipeline: 'book', executionId, input: { n: executionId } });
    const store = new ExecutionStore(database.db);
    await until(
      async () => (await Promise.all(ids.map((id) => store.get('acme', id)))).every((r) => r?.status === 'FAILED'),
      180_000,
      'every execution to fail',
    );

    // The ledger is back; a job at 5/s re-drives the group, and the service is killed part way.
    await database.db.query(`UPDATE test_ledger_state SET down = false`);
    const [group] = (await call(service.url, 'GET', '/admin/tenants/acme/dlq/groups')).items;
    expect(group.count).toBe(EXECUTIONS);
    const job = await call(service.url, 'POST', '/admin/tenants/acme/redrive-jobs', {
      selection: { groupId: group.groupId },
      reason: 'ledger back',
      allowFailed: true,
      ratePerSecond: 5,
      batchSize: 20,
    });
    await until(
      async () => (await call(service.url, 'GET', `/admin/tenants/acme/redrive-jobs/${job.jobId}`)).counts.admitted >= KILL_AFTER,
      120_000,
      `${KILL_AFTER} admitted items`,
    );
    await stopped(service.child, 'SIGKILL');
    const atKill = (
      await database.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM redrive_job_item WHERE job_id = $1 AND state = 'ADMITTED'`, [job.jobId])
    ).rows[0].n;
    expect(atKill).toBeLessThan(EXECUTIONS);

    const restarted = await startService();
    await until(
      async () => {
        const now = await call(restarted.url, 'GET', `/admin/tenants/acme/redrive-jobs/${job.jobId}`);
        return now.status === 'COMPLETED' && now.counts.running === 0;
      },
      180_000,
      'the job to complete after the restart',
    );
    const done = await call(restarted.url, 'GET', `/admin/tenants/acme/redrive-jobs/${job.jobId}`);
    expect(done.counts).toMatchObject({ selected: EXECUTIONS, admitted: EXECUTIONS, skipped: 0, succeeded: EXECUTIONS, failedAgain: 0 });

    // Exactly once, counted three ways.
    const audit = await database.db.query<{ execution_id: string; n: number }>(
      `SELECT execution_id, count(*)::int AS n FROM redrive_audit WHERE job_id = $1 GROUP BY 1`,
      [job.jobId],
    );
    expect(audit.rows.length).toBe(EXECUTIONS);
    expect(audit.rows.filter((row) => row.n !== 1)).toEqual([]);
    const bookings = await database.db.query<{ execution_id: string; n: number }>(
      `SELECT execution_id, count(*)::int AS n FROM test_ledger_booking GROUP BY 1`,
    );
    expect(bookings.rows.length).toBe(EXECUTIONS);
    expect(bookings.rows.filter((row) => row.n !== 1)).toEqual([]);
    const client = await import('@temporalio/client');
    const connection = await client.Connection.connect({ address: inject('temporalAddress') });
    try {
      const temporal = new client.Client({ connection });
      const runs = new Map<string, number>();
      await until(
        async () => {
          runs.clear();
          for await (const run of temporal.workflow.list({ query: `TaskQueue = '${taskQueue}' AND WorkflowType = 'pipelineWorkflow'` }))
            runs.set(run.workflowId, (runs.get(run.workflowId) ?? 0) + 1);
          return [...runs.values()].reduce((a, b) => a + b, 0) >= EXECUTIONS * 2;
        },
        60_000,
        'every run to be visible',
      );
      expect(runs.size).toBe(EXECUTIONS);
      expect([...runs.entries()].filter(([, n]) => n !== 2)).toEqual([]);
    } finally {
      await connection.close();
    }
    await stopped(restarted.child, 'SIGTERM');
  });
});
