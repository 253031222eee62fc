/**
 * The invoices pipeline on the real engine: Temporal's time-skipping test server and PGlite,
 * started by the public testing module, the render step served by the Python reference worker
 * (examples/python-worker, a separate process speaking the wire contract). The
 * reservation's retry schedule (30 s, 1 min, 2 min, 4 min) runs in seconds because the test
 * server skips the waits.
 */
import { startTestEngine, type TestEngine } from 'pipeline-orchestrator/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInvoicesPipeline } from '../pipeline';
import { fakes, invoice } from './fakes';
import { startPythonWorker, type PythonWorker } from './python-worker';

let engine: TestEngine;
let worker: PythonWorker;
const { deps, calls } = fakes({ reserveFailures: 4 });

beforeAll(async () => {
  worker = await startPythonWorker();
  engine = await startTestEngine({ pipelines: [createInvoicesPipeline({ ...deps, renderUrl: worker.url })] });
});

afterAll(async () => {
  await engine?.stop();
  await worker?.stop();
});

describe('invoices on the engine', () => {
  it('succeeds after four refused reservations on the 30 s … 4 min schedule, each attempt a new key, and answers its result', async () => {
    const execution = await engine.start('invoices', invoice, { executionId: 'inv-1' });
    const { record, output } = await engine.result(execution);
    expect(record.status).toBe('SUCCEEDED');
    expect(output).toEqual({ invoiceId: 'inv-1', messageId: 'msg-acme' });
    expect(calls.reserve).toEqual([1, 2, 3, 4, 5].map((attempt) => `test/inv-1:1:${attempt}`));
    expect(calls.send).toEqual(['test/inv-1:3:1']);
    // The Python worker ran its handler once, for the render step's first attempt.
    expect([...worker.handled]).toEqual([['inv-1:2:1', 1]]);

    // What the client that submitted the invoice reads back.
    const result = await engine.request('GET', '/api/tenants/test/executions/inv-1/result');
    expect((await result.json()).output).toEqual(output);

    const effects = await (await engine.request('GET', '/admin/tenants/test/executions/inv-1/effects')).json();
    expect(effects.items.map((effect: { stepName: string; status: string }) => [effect.stepName, effect.status])).toEqual([
      ['reserve', 'SUCCEEDED'],
      ['send', 'SUCCEEDED'],
    ]);
  });
});
