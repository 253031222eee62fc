/**
 * One deadline (`pipeline.temporal.call-timeout`) over many Temporal calls: a start that
 * waits for a closing previous run makes up to 14 under one deadline. The SDK adds an abort
 * listener per call and never removes it, so without a raised bound Node printed
 * MaxListenersExceededWarning (seen in the e2e output), which reads as a leak. Real dev server.
 */
import { Client } from '@temporalio/client';
import { afterAll, expect, inject, it } from 'vitest';
import { withCallDeadline } from '../../src/temporal/call-deadline';
import { connectClient } from '../../src/temporal/connection';
import { scaled } from '../helpers/time-scale';

const CALLS = 14;
let connection: Awaited<ReturnType<typeof connectClient>> | undefined;
afterAll(async () => connection?.close());

it(`answers ${CALLS} calls under one deadline, and Node warns of no listener leak`, { timeout: scaled(60_000) }, async () => {
  connection = await connectClient({ address: inject('temporalAddress') });
  const client = new Client({ connection });
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
  process.on('warning', onWarning);
  try {
    const answers = await withCallDeadline(client, scaled(30_000), async () => {
      const seen: string[] = [];
      for (let i = 0; i < CALLS; i++) {
        seen.push(
          await client.workflow
            .getHandle(`call-deadline-nobody-${i}`)
            .describe()
            .then(
              () => 'found',
              (err: Error) => err.name,
            ),
        );
      }
      return seen;
    });
    expect(answers).toEqual(Array.from({ length: CALLS }, () => 'WorkflowNotFoundError'));
    await new Promise((resolve) => setTimeout(resolve, 50)); // Node emits warnings on a later tick
    expect(warnings.filter((warning) => warning.startsWith('MaxListenersExceededWarning'))).toEqual([]);
  } finally {
    process.off('warning', onWarning);
  }
});
