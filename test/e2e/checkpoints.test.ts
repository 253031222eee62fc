/**
 * Checkpoint publication with its own Temporal dev server, which the test stops and
 * restarts: a repeated handoff key starts one execution and counts one suppression;
 * 20 checkpoints published while Temporal is down are all kept (delivery-failure log,
 * backlog metric), and after the restart each is admitted exactly once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { checkpointExecutionId } from '../../src/service/checkpoints';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server';
import { leasePort, type PortLease } from '../../src/port-allocator';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { until } from '../helpers/until';

let engine: TestEngine;
let server: DevServer | undefined;
/** Leased for the whole file: the server restarts on this port, and no other allocator hands it out meanwhile. */
let port: PortLease;
const dataDir = mkdtempSync(join(tmpdir(), 'pipeline-checkpoints-'));
const startServer = () => startDevServer({ port: port.port, dbFilename: join(dataDir, 'temporal.db') });

const metric = async (name: string) => {
  const text = await (await engine.service.app.request('/metrics')).text();
  const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return match ? Number(match[1]) : NaN;
};
const publish = (body: object) => engine.request('POST', '/api/tenants/acme/checkpoints', { body });
beforeAll(async () => {
  port = await leasePort();
  server = await startServer();
  engine = await startTestEngine(
    [definePipeline({ name: 'ingest', steps: [localStep('count', (input: { records: unknown[] }) => ({ count: input.records.length }))] })],
    { 'pipeline.temporal.address': server.address, 'pipeline.checkpoint.interval': '200ms', 'pipeline.checkpoint.slow-admission': '3s' },
  );
});
afterAll(async () => {
  await engine?.stop();
  await server?.stop();
  port?.release();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('checkpoint publication', () => {
  it('admits a handoff key once and suppresses the repeat', async () => {
    const first = await publish({ handoffKey: 'batch-0001', pipeline: 'ingest', records: [{ a: 1 }, { a: 2 }] });
    expect(first.status).toBe(202);
    const again = await publish({ handoffKey: 'batch-0001', pipeline: 'ingest', records: [{ a: 1 }, { a: 2 }] });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ duplicate: true, executionId: checkpointExecutionId('batch-0001') });
    const record = await engine.waitFor('acme', checkpointExecutionId('batch-0001'), ['SUCCEEDED'], 20_000);
    expect(record).toMatchObject({ executionKey: 'batch-0001', segmentInput: { count: 2 } });
    const executions = await engine.service.db.query("SELECT count(*)::int AS n FROM execution_record WHERE execution_key = 'batch-0001'");
    expect(executions.rows[0].n).toBe(1);
    expect(await metric('pipeline_checkpoint_duplicates_suppressed_total')).toBe(1);
    expect((await publish({ handoffKey: 'batch-0002', pipeline: 'nope', records: [] })).status).toBe(422);
  });

  it('keeps 20 checkpoints published while Temporal is down and admits each exactly once after it returns', async () => {
    await server!.stop();
    server = undefined;
    const keys = Array.from({ length: 20 }, (_, i) => `down-${String(i).padStart(2, '0')}`);
    for (const handoffKey of keys) expect((await publish({ handoffKey, pipeline: 'ingest', records: [handoffKey] })).status).toBe(202);
    await until(
      async () => engine.logs.some((l) => l.event === 'checkpoint_publication_delivery_failure' && String(l.handoffKey).startsWith('down-')),
      60_000,
      'a delivery-failure log',
    );
    expect(await metric('pipeline_checkpoint_backlog')).toBe(20);
    expect(await metric('pipeline_checkpoint_lag_seconds')).toBeGreaterThan(0);
    const dlqBefore = await engine.service.db.query('SELECT count(*)::int AS n FROM execution_dlq');
    expect(dlqBefore.rows[0].n).toBe(0);

    server = await startServer();
    await until(
      async () => {
        const pending = await engine.service.db.query("SELECT count(*)::int AS n FROM checkpoint_outbox WHERE status = 'PENDING'");
        return pending.rows[0].n === 0;
      },
      90_000,
      'every checkpoint admitted',
    );
    for (const key of keys) expect((await engine.waitFor('acme', checkpointExecutionId(key), ['SUCCEEDED'], 60_000)).executionKey).toBe(key);
    const counts = await engine.service.db.query(
      "SELECT count(*)::int AS n, count(DISTINCT execution_key)::int AS d FROM execution_record WHERE execution_key LIKE 'down-%'",
    );
    expect(counts.rows[0]).toEqual({ n: 20, d: 20 });
    for (const key of keys.slice(0, 5)) expect(await engine.runsOf('acme', checkpointExecutionId(key), 1)).toHaveLength(1);
    expect(await metric('pipeline_checkpoint_backlog')).toBe(0);
    expect((await engine.service.db.query('SELECT count(*)::int AS n FROM execution_dlq')).rows[0].n).toBe(0);
    expect((await engine.service.db.query('SELECT count(*)::int AS n FROM item_reject')).rows[0].n).toBe(0);
  });
});
