/**
 * Workflow bundle of the memory figure's bare variant: only the SDK and these two workflows, so
 * what a cached run holds there is the SDK's own per-run state, the floor the engine is read against.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { bareActivities } from './bare';

const { down } = proxyActivities<typeof bareActivities>({
  startToCloseTimeout: '5 minutes',
  // The engine's `park` pipeline waits 10 minutes between attempts; the same wait here.
  retry: { initialInterval: '10 minutes', backoffCoefficient: 1, maximumAttempts: 5 },
});
const { sleep } = proxyActivities<typeof bareActivities>({ startToCloseTimeout: '15 minutes' });

const { noop, flaky } = proxyActivities<typeof bareActivities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '10ms', backoffCoefficient: 2, maximumInterval: '50ms' },
});

/** Warm-up, as the engine's: one no-op call and one that fails once. */
export async function bareWarmWorkflow(input: unknown): Promise<unknown> {
  return flaky(await noop(input), 1);
}

/** Parks in retry backoff: its one activity always fails. */
export async function bareParkWorkflow(): Promise<unknown> {
  return down();
}

/** Runs one long activity (10 minutes), as the engine's `sleepy` pipeline does. */
export async function bareSleepyWorkflow(input: unknown): Promise<unknown> {
  return sleep(input);
}
