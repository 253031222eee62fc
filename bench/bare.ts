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
};
