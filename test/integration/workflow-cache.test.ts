/**
 * `pipeline.orchestrator.worker.max-cached-workflows`: a worker whose workflow cache holds 2 runs
 * while 10 are alive (each parked in a retry backoff) evicts 8 of them and replays them when they
 * wake; every execution still ends SUCCEEDED with each transition identity run exactly once (steps
 * are activities, so a replay must never call a handler: counted). The cache's fill is a gauge on /metrics.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { scaled } from '../helpers/time-scale';

const RUNS = 10;
const CACHE = 2;
/** Handler invocations per transition identity (executionId:stepIndex:attempt). */
const invocations = new Map<string, number>();
/** Attempts of the `gated` step per execution. */
const gatedAttempts = new Map<string, number>();
let gateOpen = false;

const count = (key: string) => invocations.set(key, (invocations.get(key) ?? 0) + 1);

const pipelines = [
  definePipeline({
    name: 'cache-churn',
    steps: [
      localStep('first', (input: { n: number }, ctx) => {
        count(ctx.transitionKey);
        return { n: input.n + 1 };
      }),
      // Fails (retryably) until the test has seen every run parked here at once.
      localStep(
        'gated',
        (input: { n: number }, ctx) => {
          count(ctx.transitionKey);
          gatedAttempts.set(ctx.executionId, (gatedAttempts.get(ctx.executionId) ?? 0) + 1);
          if (!gateOpen) throw Object.assign(new Error('dependency down'), { code: 'DEPENDENCY_DOWN' });
          return { n: input.n + 10 };
        },
        { retry: { limit: 1000, waitMs: 200, maxBackoffMs: 200, jitter: false } },
      ),
      localStep('last', (input: { n: number }, ctx) => {
        count(ctx.transitionKey);
        return { n: input.n + 100 };
      }),
    ],
  }),
];

let engine: TestEngine;

beforeAll(async () => {
  engine = await startTestEngine(pipelines, { 'pipeline.orchestrator.worker.max-cached-workflows': CACHE });
});

afterAll(async () => {
  await engine?.stop();
});

async function cachedNow(): Promise<number> {
  const text = await (await engine.service.app.request('/metrics')).text();
  // The pipeline worker's cache (the jobs' worker has its own line, on its own task queue).
  const series = `pipeline_worker_cached_workflows{task_queue="${engine.taskQueue}"} `;
  const line = text.split('\n').find((l) => l.startsWith(series));
  if (!line) throw new Error(`no ${series.trim()} line in /metrics`);
  return Number(line.slice(series.length));
}

describe('a workflow cache smaller than the runs alive', () => {
  it('holds at most its size, and every run still succeeds with each transition identity run once', async () => {
    const ids = Array.from({ length: RUNS }, (_, i) => `cache-${i}`);
    for (const id of ids) await engine.start('tenant-a', { pipeline: 'cache-churn', executionId: id, input: { n: 0 } });

    // Every run parked in the gated step's backoff at the same time, the cache sampled meanwhile.
    const samples: number[] = [];
    const deadline = Date.now() + scaled(60_000);
    while (!ids.every((id) => (gatedAttempts.get(id) ?? 0) >= 2)) {
      samples.push(await cachedNow());
      if (Date.now() > deadline) throw new Error(`not every run reached its second gated attempt: ${JSON.stringify([...gatedAttempts])}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const running = await Promise.all(ids.map((id) => engine.service.store.get('tenant-a', id)));
    expect(running.map((r) => r?.status)).toEqual(ids.map(() => 'RUNNING'));
    // The cache is full (the gauge reads the bound, not 0 or a cache turned off) while 10 runs
    // are alive, each past at least one workflow task: at least 8 were evicted, and each of those
    // replays its history at its next task, when the gate opens below.
    const full = await cachedNow();
    samples.push(full);
    expect(full).toBe(CACHE);
    expect(Math.max(...samples)).toBeLessThanOrEqual(CACHE);

    gateOpen = true;
    for (const id of ids) {
      const record = await engine.waitFor('tenant-a', id, ['SUCCEEDED', 'FAILED'], 60_000);
      expect(record.status).toBe('SUCCEEDED');
      expect(record.segmentInput).toEqual({ n: 111 });
    }
    samples.push(await cachedNow());
    expect(Math.max(...samples)).toBeLessThanOrEqual(CACHE);

    // Replays after eviction ran no handler again: one invocation per identity, and the first and
    // last steps once per execution.
    expect([...invocations.values()].every((n) => n === 1)).toBe(true);
    for (const id of ids) {
      expect(invocations.get(`${id}:0:1`)).toBe(1);
      const attempts = gatedAttempts.get(id)!;
      expect(attempts).toBeGreaterThanOrEqual(3);
      for (let attempt = 1; attempt <= attempts; attempt++) expect(invocations.get(`${id}:1:${attempt}`)).toBe(1);
      expect([...invocations.keys()].filter((key) => key.startsWith(`${id}:2:`))).toEqual([`${id}:2:1`]);
    }
  });
});
