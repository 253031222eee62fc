/** Workflow bundle for benchmarks: the engine's workflow and the bare baseline, on one worker. */
import { proxyActivities } from '@temporalio/workflow';
import type { bareActivities } from './bare';

export { pipelineWorkflow } from '../src/workflows/pipeline-workflow';

const { noop, flaky } = proxyActivities<typeof bareActivities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '10ms', backoffCoefficient: 2, maximumInterval: '50ms' },
});

export async function bareWorkflow(steps: number, input: unknown, failTimes = 0): Promise<unknown> {
  let value = input;
  for (let i = 0; i < steps; i++) value = failTimes > 0 && i === 0 ? await flaky(value, failTimes) : await noop(value);
  return value;
}
