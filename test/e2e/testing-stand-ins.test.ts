/**
 * The testing module's stand-ins for one step inside an otherwise real run: `steps` in
 * memory and `overrides` on the time-skipping engine replace one step's code and leave the
 * others running their own (counted), and remote stand-ins answer a deadline or a body that
 * is not JSON in memory as the transports would. The engine's `start` and `result` are
 * typed by the pipeline (the `@ts-expect-error` lines fail `tsc` the day they compile).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { pipelineClient, PipelineClientError } from '../../src/pipeline/client';
import { localStep, pipeline, restStep } from '../../src/pipeline/define';
import { runPipeline, startTestEngine, workerAnswerNotJson, workerDeadline, type TestEngine } from '../../src/testing';

interface Order {
  id: string;
  cents: number;
}

/** Runs of each step's own code, by step name. */
const runs: Record<string, number> = {};
const counted =
  <I, O>(name: string, run: (input: I) => O) =>
  (input: I): O => {
    runs[name] = (runs[name] ?? 0) + 1;
    return run(input);
  };

const orders = pipeline('orders', { version: 1, retry: { limit: 0 } })
  .step(
    localStep(
      'validate',
      counted('validate', (order: Order) => ({ id: order.id, cents: order.cents })),
    ),
  )
  .step(
    localStep(
      'charge',
      counted('charge', (order: { id: string; cents: number }): { id: string; charged: number } => {
        throw new Error(`the real payment provider is not reachable from a test (${order.id})`);
      }),
    ),
  )
  .step(
    localStep(
      'receipt',
      counted('receipt', (charge: { id: string; charged: number }) => ({ receipt: `${charge.id}:${charge.charged}` })),
    ),
  );

const rendering = pipeline('rendering', { version: 1 })
  .step(localStep('prepare', (order: Order) => ({ id: order.id })))
  .step(restStep<{ id: string }, { pdf: string }>('render', { url: 'http://127.0.0.1:9/render' }));

describe('in memory', () => {
  it('stands in for one LOCAL step; the others run their own code', async () => {
    const before = { ...runs };
    const run = await runPipeline(
      orders,
      { id: 'o-1', cents: 250 },
      { steps: { charge: (order: { id: string; cents: number }) => ({ id: order.id, charged: order.cents }) } },
    );
    expect(run).toMatchObject({ status: 'SUCCEEDED', output: { receipt: 'o-1:250' } });
    expect([runs.validate - (before.validate ?? 0), (runs.charge ?? 0) - (before.charge ?? 0), runs.receipt - (before.receipt ?? 0)]).toEqual([1, 0, 1]);
  });

  it('refuses a stand-in for a step the pipeline does not have', async () => {
    await expect(runPipeline(orders, { id: 'o-2', cents: 1 }, { steps: { chrage: () => null } })).rejects.toThrow(
      /steps.chrage stands in for no step of pipeline "orders"/,
    );
  });

  it('a remote stand-in answers a deadline: REMOTE_OUTCOME_UNKNOWN, one attempt, never retried', async () => {
    const run = await runPipeline(rendering, { id: 'r-1', cents: 1 }, { remote: { render: () => Promise.reject(workerDeadline(5000)) } });
    expect(run).toMatchObject({ status: 'REMOTE_OUTCOME_UNKNOWN', failedStep: 'render', errorCode: 'REMOTE_OUTCOME_UNKNOWN' });
    expect(run.attempts.filter((attempt) => attempt.step === 'render')).toHaveLength(1);
  });

  it('a remote stand-in answers a body that is not JSON: INVALID_WORKER_RESPONSE, non_retryable', async () => {
    const run = await runPipeline(rendering, { id: 'r-2', cents: 1 }, { remote: { render: () => Promise.reject(workerAnswerNotJson()) } });
    expect(run).toMatchObject({ status: 'FAILED', failedStep: 'render', errorCode: 'INVALID_WORKER_RESPONSE', terminalReason: 'non_retryable' });
    expect(run.attempts.filter((attempt) => attempt.step === 'render')).toHaveLength(1);
  });
});

describe('on the time-skipping engine', () => {
  let engine: TestEngine<typeof orders>;
  const charged: string[] = [];

  beforeAll(async () => {
    engine = await startTestEngine({
      pipelines: [orders],
      overrides: {
        orders: {
          charge: (order: { id: string; cents: number }, ctx: { idempotencyKey: string }) => {
            charged.push(ctx.idempotencyKey);
            return { id: order.id, charged: order.cents };
          },
        },
      },
    });
  });
  afterAll(async () => engine?.stop());

  it('runs the stand-in in place of one step inside a real run, the other steps their own code, and types start and result by the pipeline', async () => {
    const before = { ...runs };
    const execution = await engine.start(orders, { id: 'e-1', cents: 700 }, { executionId: 'e-1' });
    const { record, output } = await engine.result(execution);
    expect(record.status).toBe('SUCCEEDED');
    expectTypeOf(output).toEqualTypeOf<{ receipt: string } | undefined>();
    expect(output?.receipt).toBe('e-1:700');
    expect(charged).toEqual(['test/e-1:1:1']);
    expect([runs.validate - (before.validate ?? 0), (runs.charge ?? 0) - (before.charge ?? 0), runs.receipt - (before.receipt ?? 0)]).toEqual([1, 0, 1]);
  });

  it('does not compile an input the pipeline does not take; a name gives unknown, never any', async () => {
    const typed = () => {
      // @ts-expect-error cents must be a number
      void engine.start(orders, { id: 'e-2', cents: '7' });
      // @ts-expect-error the input is an Order
      void engine.start(orders, null);
    };
    expect(typeof typed).toBe('function');
    const byName = await engine.start('orders', { id: 'e-3', cents: 1 });
    const { output } = await engine.result(byName);
    expectTypeOf(output).toEqualTypeOf<unknown>();
  });

  it("a team's own service starts and reads an execution through the API with the typed client", async () => {
    const client = pipelineClient({
      baseUrl: `http://engine/${engine.service.config['pipeline.admin.prefix']}`,
      token: engine.adminToken,
      tenantId: 'acme',
      fetch: (url, init) => Promise.resolve(engine.service.app.request(String(url), init)),
    });
    const execution = await client.start(orders, { id: 'c-1', cents: 40 }, { executionId: 'c-1' });
    expect(execution).toEqual({ tenantId: 'acme', executionId: 'c-1' });
    await engine.result(execution);
    const outcome = await client.result(execution);
    expect(outcome).toEqual({ status: 'SUCCEEDED', output: { receipt: 'c-1:40' } });
    if (outcome.status === 'SUCCEEDED') expectTypeOf(outcome.output).toEqualTypeOf<{ receipt: string }>();
    const typed = () => {
      // @ts-expect-error the client's input is typed by the pipeline too
      void client.start(orders, { id: 'c-2' });
    };
    expect(typeof typed).toBe('function');
    await expect(client.result({ tenantId: 'acme', executionId: 'no-such' })).rejects.toThrow(PipelineClientError);
  });

  it('refuses an override of a remote step, or of a step the pipeline does not have, when the engine starts', async () => {
    await expect(startTestEngine({ pipelines: [rendering], overrides: { rendering: { render: () => null } } })).rejects.toThrow(
      /overrides.rendering.render is a REST step; stand in for its worker with startStubWorker/,
    );
    await expect(startTestEngine({ pipelines: [orders], overrides: { orders: { chrage: () => null } } })).rejects.toThrow(
      /overrides.orders.chrage names no step of pipeline "orders"/,
    );
  });
});

describe('two engines on one store (dataDir)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'shared-engine-store-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it("the second engine starts on the first one's store: its executions readable, a reshaped version refused naming the change", async () => {
    const first = await startTestEngine({ pipelines: [orders], dataDir });
    try {
      const execution = await first.start(orders, { id: 's-1', cents: 5 }, { executionId: 's-1' });
      expect((await first.result(execution)).record.status).toBe('FAILED'); // the real charge step cannot reach its provider
    } finally {
      await first.stop();
    }
    // The same version with two steps swapped: refused at start, the FAILED execution still pinned to the stored shape.
    const reshaped = { ...orders, steps: [orders.steps[0], orders.steps[2], orders.steps[1]] };
    await expect(startTestEngine({ pipelines: [reshaped], dataDir })).rejects.toThrow(
      /pipeline "orders" version 1 changed shape .* 1 unfinished execution\(s\) are pinned .*moved charge 2→3, moved receipt 3→2/,
    );
    const again = await startTestEngine({ pipelines: [orders], dataDir });
    try {
      const record = await (await again.request('GET', '/admin/tenants/test/executions/s-1')).json();
      expect(record).toMatchObject({ executionId: 's-1', status: 'FAILED' });
    } finally {
      await again.stop();
    }
  });
});
