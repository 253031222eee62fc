/**
 * The baseline: a bare Temporal workflow calling N no-op activities, no store, no
 * effects, no DLQ. The workflow half of this file is bundled; the activities run in the
 * same worker as the engine's.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';

export const bareActivities = {
  async noop(value: unknown): Promise<unknown> {
    return value;
  },
  async flaky(value: unknown, failTimes: number): Promise<unknown> {
    if (Context.current().info.attempt <= failTimes) throw ApplicationFailure.retryable('flaky', 'BenchFlaky');
    return value;
  },
  /** The memory figure's bare `park`: a dependency that stays down. */
  async down(): Promise<never> {
    throw ApplicationFailure.retryable('dependency down', 'BenchDown');
  },
  /** The memory figure's bare `sleepy`: a long call that ends early when cancelled. */
  async sleep(value: unknown): Promise<unknown> {
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, 600_000);
      Context.current().cancellationSignal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve(null);
      });
    });
    return value;
  },
};
