/**
 * ExecutionStore.pendingStart: the start an execution's read names while it is QUEUED
 * (`pendingStart` on GET …/executions/{id}). 'any' is the oldest PENDING dispatch row (the
 * run-end watch and the re-drive guard ask it); 'queued-for' is the row of the dispatch the
 * record waits for, so an older dispatch's row that outlived it is not named as this start,
 * and a record an older release left without dispatch_id falls back to any.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ExecutionStore } from '../../src/store/execution-store';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';

let database: TestDatabase;
let store: ExecutionStore;
beforeAll(async () => {
  database = await createTestDatabase();
  store = new ExecutionStore(database.db);
});
afterAll(async () => {
  await database?.drop();
});

async function admit(tenantId: string, executionId: string): Promise<void> {
  const record = await store.create(
    {
      tenantId,
      executionId,
      executionKey: null,
      pipeline: 'p',
      workflowId: `w-${executionId}`,
      stepCount: 1,
      input: {},
      correlationId: `c-${executionId}`,
      resourceType: null,
      resourceName: null,
    },
    {},
    { owner: 'test', ms: 1000 },
  );
  expect(record?.status).toBe('QUEUED');
}

it("names the record's own dispatch for 'queued-for' while 'any' names the oldest PENDING row", async () => {
  await admit('t', 'ps-1');
  const own = { dispatchId: 'start', startAttempts: 1, lastError: null };
  expect(await store.pendingStart('t', 'ps-1', 'any')).toMatchObject(own);
  expect(await store.pendingStart('t', 'ps-1', 'queued-for')).toMatchObject(own);

  // An older dispatch's row, still PENDING (it outlived the dispatch the record now waits for).
  await database.db.query(
    `INSERT INTO execution_dispatch (tenant_id, execution_id, dispatch_id, workflow_args, attempts, last_error, created_at)
     VALUES ('t', 'ps-1', 'older', '{}'::jsonb, 4, 'an old error', now() - interval '1 hour')`,
  );
  expect(await store.pendingStart('t', 'ps-1', 'any')).toMatchObject({ dispatchId: 'older', startAttempts: 4, lastError: 'an old error' });
  expect(await store.pendingStart('t', 'ps-1', 'queued-for')).toMatchObject(own);
  const read = await store.pendingStart('t', 'ps-1', 'queued-for');
  expect(Date.parse(read!.requestedAt)).not.toBeNaN();

  // Another tenant's execution of the same id is not this one.
  expect(await store.pendingStart('u', 'ps-1', 'queued-for')).toBeNull();
  expect(await store.pendingStart('u', 'ps-1', 'any')).toBeNull();
});

it('falls back to any PENDING row for a record without dispatch_id (written by an older release), and reads null once none is PENDING', async () => {
  await admit('t', 'ps-2');
  await database.db.query(
    `INSERT INTO execution_dispatch (tenant_id, execution_id, dispatch_id, workflow_args, attempts, created_at)
     VALUES ('t', 'ps-2', 'older', '{}'::jsonb, 2, now() - interval '1 hour')`,
  );
  await database.db.query(`UPDATE execution_record SET dispatch_id = NULL WHERE tenant_id = 't' AND execution_id = 'ps-2'`);
  expect(await store.pendingStart('t', 'ps-2', 'queued-for')).toMatchObject({ dispatchId: 'older', startAttempts: 2 });

  await database.db.query(`UPDATE execution_dispatch SET status = 'STARTED', run_id = 'r', started_at = now() WHERE tenant_id = 't' AND execution_id = 'ps-2'`);
  expect(await store.pendingStart('t', 'ps-2', 'queued-for')).toBeNull();
  expect(await store.pendingStart('t', 'ps-2', 'any')).toBeNull();
});

it("reads null for 'queued-for' when only an older dispatch's row is PENDING and the record's own has started", async () => {
  await admit('t', 'ps-3');
  await database.db.query(
    `INSERT INTO execution_dispatch (tenant_id, execution_id, dispatch_id, workflow_args, created_at)
     VALUES ('t', 'ps-3', 'older', '{}'::jsonb, now() - interval '1 hour')`,
  );
  await database.db.query(
    `UPDATE execution_dispatch SET status = 'STARTED', run_id = 'r', started_at = now() WHERE tenant_id = 't' AND execution_id = 'ps-3' AND dispatch_id = 'start'`,
  );
  expect(await store.pendingStart('t', 'ps-3', 'queued-for')).toBeNull();
  expect(await store.pendingStart('t', 'ps-3', 'any')).toMatchObject({ dispatchId: 'older' });
});
