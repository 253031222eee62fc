/** Workflow bundle for benchmarks: the engine's workflow and the bare baseline, on one worker. */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { bareActivities, floorActivities } from './bare';

export { pipelineWorkflow } from '../src/workflows/pipeline-workflow';

const { noop, flaky } = proxyActivities<typeof bareActivities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '10ms', backoffCoefficient: 2, maximumInterval: '50ms' },
});

const local = proxyLocalActivities<typeof bareActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '10ms', backoffCoefficient: 2, maximumInterval: '50ms' },
});

/** Figure 1f's bare Temporal with local activities: N no-op local activities, all in the run's first workflow task. */
export async function bareLocalWorkflow(steps: number, input: unknown): Promise<unknown> {
  let value = input;
  for (let i = 0; i < steps; i++) value = await local.noop(value);
  return value;
}

export async function bareWorkflow(steps: number, input: unknown, failTimes = 0): Promise<unknown> {
  let value = input;
  for (let i = 0; i < steps; i++) value = failTimes > 0 && i === 0 ? await flaky(value, failTimes) : await noop(value);
  return value;
}

/** What the floor carries of the engine's own, to measure one part at a time (`--floor-with`). */
export interface FloorWith {
  /** each activity's heartbeat timeout, as the engine's steps have (ms) */
  heartbeatMs?: number;
  /** each activity's UI summary and non-retryable failure types, as the engine's */
  summary?: boolean;
  /** each activity's input padded by this many bytes (the engine's StepRequest is ≈ 290 B more than the floor's) */
  padBytes?: number;
}

/** Figure 1c's floor: the bare workflow with one Postgres commit per step (bench/bare.ts). */
export async function floorWorkflow(id: string, steps: number, input: unknown, withParts: FloorWith = {}): Promise<unknown> {
  // One proxy per step, as the engine's, only when each step carries its own summary.
  const persistFor = (step: number) =>
    proxyActivities<ReturnType<typeof floorActivities>>({
      startToCloseTimeout: '5 minutes',
      ...(withParts.heartbeatMs ? { heartbeatTimeout: withParts.heartbeatMs } : {}),
      retry: {
        initialInterval: '10ms',
        backoffCoefficient: 2,
        maximumInterval: '50ms',
        ...(withParts.summary ? { nonRetryableErrorTypes: ['PipelineExecutionFailed', 'PipelineDuplicateRun'] } : {}),
      },
      ...(withParts.summary ? { summary: `step ${step} noop · LOCAL · transition ${id}:${step}:1` } : {}),
    }).persist;
  const shared = persistFor(0);
  const pad = withParts.padBytes ? 'x'.repeat(withParts.padBytes) : undefined;
  let value = input;
  for (let i = 0; i < steps; i++) value = await (withParts.summary ? persistFor(i) : shared)(id, i + 1, i === steps - 1, value, pad);
  return value;
}
