/**
 * Bulk jobs' runs on a task queue of their own (`pipeline.redrive-job.run-task-queue`), against
 * the real dev server and Postgres. The engine here runs live runs only
 * (`pipeline.orchestrator.worker.runs` live): a job's re-driven runs start on the bulk queue and
 * none of their steps runs while no worker serves it, while a live execution submitted meanwhile
 * succeeds; the job, held back by its batchSize, says that no worker polls that queue. A run terminated there before its first step is ended by the run-end watch, not
 * started again by the dispatch sweeper (its row is still unmarked: the first step marks it). Then a second process
 * composition that runs bulk runs only (on the same store and Temporal) runs each of them: every
 * re-driven step exactly once more, counted per execution, one audit row each.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { loadConfig } from '../../src/config/config';
import { createLog } from '../../src/log';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { startService, type Service } from '../../src/runtime';
import { FAST_RETRY, startTestEngine, type TestEngine } from '../helpers/engine';
import { scaled } from '../helpers/time-scale';
import { until } from '../helpers/until';

let engine: TestEngine;
let bulkWorker: Service | undefined;
const bulkQueue = `bulk-${randomBytes(5).toString('hex')}`;
/** executions whose charge works again */
const healthy = new Set<string>();
/** every charge call, per execution: a re-drive is one more */
const calls = new Map<string, number>();
const IDS = Array.from({ length: 6 }, (_, i) => `bq-${i + 1}`);
const TERMINATED = 'bq-1';
/** the job's in-flight bound: the first four are admitted, the rest wait for room */
const BATCH = 4;

const pipelines = [
  definePipeline({
    name: 'charge',
    steps: [
      localStep(
        'charge',
        (input: unknown, ctx) => {
          calls.set(ctx.executionId, (calls.get(ctx.executionId) ?? 0) + 1);
          if (!healthy.has(ctx.executionId)) throw Object.assign(new Error('card processor down'), { code: 'PROCESSOR_DOWN' });
          return input;
        },
        { retry: { limit: 0 } },
      ),
    ],
  }),
];

/** The settings both compositions share: one store, one Temporal, the same two run queues. */
const shared = () => ({
  'pipeline.redrive-job.run-task-queue': bulkQueue,
  'pipeline.sweeper.interval': '500ms',
  'pipeline.temporal.call-timeout': '30s',
  'pipeline.store.idle-timeout': '1s',
  ...FAST_RETRY,
});

beforeAll(async () => {
  engine = await startTestEngine(pipelines, { ...shared(), 'pipeline.orchestrator.worker.runs': 'live' });
  for (const executionId of IDS) await engine.start('acme', { pipeline: 'charge', executionId, input: { amount: 1 } });
  for (const executionId of IDS) await engine.waitFor('acme', executionId, ['FAILED'], 60_000);
}, scaled(120_000));

afterAll(async () => {
  await bulkWorker?.stop();
  await engine?.stop();
});

async function json(res: Response, status: number) {
  const body = await res.json();
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${JSON.stringify(body)}`);
  return body;
}
const job = async (jobId: string) => json(await engine.request('GET', `/admin/tenants/acme/redrive-jobs/${jobId}`), 200);
const describeRun = (executionId: string) => engine.service.client.workflow.getHandle(`pipeline/acme/${executionId}`).describe();

describe("a bulk job's runs on a task queue of their own", () => {
  it(
    'start there, wait for a worker that runs them while live runs go on, and each re-driven step runs exactly once more',
    { timeout: scaled(300_000) },
    async () => {
      expect(Object.fromEntries(calls)).toEqual(Object.fromEntries(IDS.map((id) => [id, 1])));
      for (const id of IDS) healthy.add(id);
      const created = await json(
        await engine.request('POST', '/admin/tenants/acme/redrive-jobs', {
          body: { selection: { executionIds: IDS }, reason: 'processor back', allowFailed: true, ratePerSecond: 50, batchSize: BATCH },
        }),
        202,
      );
      await until(async () => (await job(created.jobId)).counts.admitted === BATCH, 120_000, 'the job to admit a batch');
      // Held back by its batchSize, the job says why its runs do not end: no worker polls their queue (Temporal's answer).
      await until(async () => /^no worker polls/.test((await job(created.jobId)).heldBack ?? ''), 60_000, 'the job to say no worker polls its runs');
      expect(await job(created.jobId)).toMatchObject({
        status: 'RUNNING',
        counts: { admitted: BATCH, running: BATCH, remaining: IDS.length - BATCH },
        etaSeconds: null,
        heldBack: `no worker polls task queue ${bulkQueue}, where its ${BATCH} re-driven runs wait: start one with pipeline.orchestrator.worker.runs=bulk or all`,
      });

      // Every re-driven run is on the bulk queue, still open, and none of their steps has run: no worker here serves that queue.
      for (const id of IDS.slice(0, BATCH)) {
        const run = await describeRun(id);
        expect([id, run.taskQueue, run.status.name]).toEqual([id, bulkQueue, 'RUNNING']);
      }
      // A live execution meanwhile runs on the live queue, on this composition's worker.
      healthy.add('bq-live');
      await engine.start('acme', { pipeline: 'charge', executionId: 'bq-live', input: { amount: 2 } });
      await engine.waitFor('acme', 'bq-live', ['SUCCEEDED'], 60_000);
      expect((await describeRun('bq-live')).taskQueue).toBe(engine.taskQueue);
      expect(IDS.map((id) => calls.get(id))).toEqual(IDS.map(() => 1));

      // A bulk run terminated in Temporal before its first step ran: the sweeper finds the dispatch's run closed and
      // starts no other (the terminate stands), and the run-end watch, which lists the bulk queue too, ends the record.
      await engine.service.client.workflow.getHandle(`pipeline/acme/${TERMINATED}`).terminate('operator stopped it');
      await until(async () => (await engine.service.store.get('acme', TERMINATED))?.status === 'FAILED', 120_000, `the run-end watch to end ${TERMINATED}`);
      expect(await engine.service.store.get('acme', TERMINATED)).toMatchObject({ status: 'FAILED', lastErrorCode: 'RUN_TERMINATED' });

      // A composition that runs bulk runs only: the same store, Temporal and queues.
      bulkWorker = await startService({
        config: loadConfig(
          {},
          {
            ...shared(),
            'pipeline.store.url': engine.database.url,
            'pipeline.temporal.address': inject('temporalAddress'),
            'pipeline.temporal.task-queue': engine.taskQueue,
            'pipeline.orchestrator.worker.workflow-bundle': inject('workflowBundlePath'),
            'pipeline.role': 'worker',
            'pipeline.orchestrator.worker.runs': 'bulk',
          },
        ),
        log: createLog({ level: 'silent' }),
        pipelines,
        http: false,
      });
      const ran = IDS.filter((id) => id !== TERMINATED);
      for (const id of ran) await engine.waitFor('acme', id, ['SUCCEEDED'], 120_000);

      // The terminated execution has its two runs, the failed first and the terminated re-drive: none started after.
      const runs = await engine.runsOf('acme', TERMINATED, 2);
      expect([runs.length, runs.at(-1)?.status]).toEqual([2, 'TERMINATED']);
      // Each re-driven step ran exactly once more; the terminated run's never did; one audit row per execution.
      expect(Object.fromEntries(IDS.map((id) => [id, calls.get(id)]))).toEqual({ ...Object.fromEntries(ran.map((id) => [id, 2])), [TERMINATED]: 1 });
      const audit = await engine.service.db.query(`SELECT execution_id, count(*)::int AS n FROM redrive_audit WHERE job_id = $1 GROUP BY 1 ORDER BY 1`, [
        created.jobId,
      ]);
      expect(audit.rows).toEqual(IDS.map((id) => ({ execution_id: id, n: 1 })));
      await until(async () => ['COMPLETED', 'HALTED'].includes((await job(created.jobId)).status), 120_000, 'the job to end');
      expect(await job(created.jobId)).toMatchObject({
        status: 'COMPLETED',
        counts: { selected: IDS.length, admitted: IDS.length, succeeded: ran.length, failedAgain: 1 },
      });
    },
  );
});
