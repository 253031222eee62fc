// examples/invoices/test/readme.test.ts
import { runPipeline } from 'pipeline-orchestrator/testing';
import { expect, it } from 'vitest';
import { createInvoicesPipeline } from '../pipeline';
import { render } from '../render';
import { fakes, invoice } from './fakes';

it('reserves once the inventory has refused twice, on the step’s own retry schedule', async () => {
  const run = await runPipeline(createInvoicesPipeline(fakes({ reserveFailures: 2 }).deps), invoice, { remote: { render } });
  expect(run.status).toBe('SUCCEEDED');
  expect(run.attempts.filter((a) => a.step === 'reserve').map((a) => a.delayMs)).toEqual([30_000, 60_000, undefined]);
});
