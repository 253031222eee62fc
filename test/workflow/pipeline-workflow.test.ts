/**
 * The pipeline workflow alone, on Temporal's time-skipping test server with mocked
 * activities: how it sequences steps, and the branches no engine test reaches on purpose:
 * a duplicate run ends quietly, an activity's terminal failure ends the run with its
 * details, and a step Temporal gave up on (limit + 1 + 10 attempts without a committed
 * outcome) falls back to `abandonStep` exactly once.
 */
import { Context } from '@temporalio/activity';
import { ActivityFailure, ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AbandonRequest, EngineActivities } from '../../src/activities/engine-activities';
import { WORKFLOWS_PATH } from '../../src/temporal/worker';
import { pipelineWorkflow } from '../../src/workflows/pipeline-workflow';
import { FailureTypes, type PipelineRunInput, type StepPlan, type StepRequest, type TerminalDetails } from '../../src/workflows/types';
import { createTimeSkippingEnv } from '../helpers/time-skipping';
import { scaled } from '../helpers/time-scale';

let env: TestWorkflowEnvironment;
let queue = 0;

beforeAll(async () => {
  env = await createTimeSkippingEnv();
}, scaled(120_000));

afterAll(async () => {
  await env?.teardown();
});

const step = (name: string, limit = 2): StepPlan => ({
  name,
  transport: 'LOCAL',
  command: false,
  retry: { limit, waitMs: 1, maxBackoffMs: 1, jitter: false },
  timeoutMs: 5000,
  heartbeatMs: 5000,
});

function runInput(overrides: Partial<PipelineRunInput> = {}): PipelineRunInput {
  return {
    tenantId: 't',
    executionId: `wf-${++queue}`,
    pipeline: 'p',
    correlationId: null,
    steps: [step('a'), step('b'), step('c')],
    resumeStepIndex: 0,
    resumeAttempt: 1,
    input: { n: 0 },
    dispatchId: 'start',
    stepActivityTypes: true,
    ...overrides,
  };
}

/** Runs the workflow on a fresh task queue with these activity mocks, recording every call. */
async function run(input: PipelineRunInput, activities: Partial<EngineActivities>) {
  const calls: { runStep: StepRequest[]; abandonStep: AbandonRequest[]; types: string[] } = { runStep: [], abandonStep: [], types: [] };
  const taskQueue = `wf-test-${queue}`;
  const runStep = async (req: StepRequest) => {
    calls.types.push(Context.current().info.activityType);
    calls.runStep.push(req);
    return activities.runStep!(req);
  };
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowsPath: WORKFLOWS_PATH,
    // Steps are scheduled under their own types (`<pipeline>:<step>`), which the default activity serves.
    activities: {
      runStep,
      default: runStep,
      async abandonStep(req: AbandonRequest) {
        calls.abandonStep.push(req);
        return activities.abandonStep!(req);
      },
    },
  });
  const handle = await env.client.workflow.start(pipelineWorkflow, { args: [input], workflowId: `pipeline/t/${input.executionId}`, taskQueue });
  const outcome: { value?: unknown; error?: unknown } = await worker.runUntil(
    handle.result().then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    ),
  );
  return { ...outcome, calls, handle };
}

const terminal = (details: TerminalDetails) =>
  ApplicationFailure.create({ type: FailureTypes.terminal, nonRetryable: true, message: details.errorCode, details: [details] });

describe('pipelineWorkflow', () => {
  it("runs the steps in order, each on the previous output; only the first carries the run's attempt, dispatch and intent", async () => {
    const input = runInput({ resumeStepIndex: 1, resumeAttempt: 3, redrive: { redriveId: 'r1', intent: 'FAILED' }, dispatchId: 'r1' });
    const { value, calls } = await run(input, { runStep: async (req) => ({ output: { n: (req.input as { n: number }).n + 1 } }) });
    expect(value).toEqual({ n: 2 });
    expect(calls.runStep.map((req) => [req.stepIndex, req.attempt, req.firstOfRun ?? false, req.dispatchId, req.redriveIntent])).toEqual([
      [1, 3, true, 'r1', 'FAILED'],
      [2, 1, false, undefined, undefined],
    ]);
    // Fields at their default are left out of the activity input (bytes in every ActivityTaskScheduled event).
    expect(Object.keys(calls.runStep[1]).filter((key) => ['firstOfRun', 'dispatchId', 'correlationId', 'redriveIntent'].includes(key))).toEqual([]);
    // Each step under its own activity type, which the Temporal UI's event list shows.
    expect(calls.types).toEqual(['p:b', 'p:c']);
    expect(calls.abandonStep).toEqual([]);
  });

  it('schedules every step as runStep in a run started before step-named activity types (its history replays)', async () => {
    const { value, calls } = await run(runInput({ stepActivityTypes: undefined }), { runStep: async (req) => ({ output: req.input }) });
    expect(value).toEqual({ n: 0 });
    expect(calls.types).toEqual(['runStep', 'runStep', 'runStep']);
  });

  it('fails a duplicate run (one the orchestrator did not start) with why: no further step, no abandonStep', async () => {
    const { error, calls } = await run(runInput(), {
      runStep: async () => {
        throw ApplicationFailure.create({ type: FailureTypes.duplicateRun, nonRetryable: true, message: 'run owned by another' });
      },
    });
    expect(error).toBeInstanceOf(WorkflowFailedError);
    const failure = (error as WorkflowFailedError).cause as ApplicationFailure;
    expect(failure.type).toBe(FailureTypes.notStartedByOrchestrator);
    expect(failure.message).toBe('run owned by another');
    expect(calls.runStep).toHaveLength(1);
    expect(calls.abandonStep).toEqual([]);
  });

  it('fails the run with the terminal details the activity committed, without abandonStep', async () => {
    const details: TerminalDetails = { status: 'FAILED', terminalReason: 'non_retryable', errorCode: 'INVALID_AMOUNT', stepIndex: 1, transitionKey: 'x:1:1' };
    let n = 0;
    const { error, calls } = await run(runInput(), {
      runStep: async (req) => {
        if (n++ === 1) throw terminal(details);
        return { output: req.input };
      },
    });
    expect(error).toBeInstanceOf(WorkflowFailedError);
    const failure = (error as WorkflowFailedError).cause as ApplicationFailure;
    expect(failure.type).toBe(FailureTypes.terminal);
    expect(failure.details?.[0]).toEqual(details);
    expect(failure.cause).toBeInstanceOf(ActivityFailure);
    expect(calls.runStep).toHaveLength(2);
    expect(calls.abandonStep).toEqual([]);
  });

  // A local activity's failure reaches the workflow as the step's own ApplicationFailure, not
  // wrapped in an ActivityFailure as a regular activity's is: the fast path decides as the plain one.
  const fast = (name: string): StepPlan => ({ ...step(name), fastPath: true });

  it('fails a duplicate run on the fast path with why, as on the plain path: no further step, no abandonStep', async () => {
    const { error, calls } = await run(runInput({ steps: [fast('a'), fast('b')] }), {
      runStep: async () => {
        throw ApplicationFailure.create({ type: FailureTypes.duplicateRun, nonRetryable: true, message: 'run owned by another' });
      },
      abandonStep: async () => ({ status: 'FAILED', terminalReason: 'retry_exhausted', errorCode: 'STEP_ABANDONED', stepIndex: 0, transitionKey: 'x:0:1' }),
    });
    const failure = (error as WorkflowFailedError).cause as ApplicationFailure;
    expect([failure.type, failure.message]).toEqual([FailureTypes.notStartedByOrchestrator, 'run owned by another']);
    expect(calls.runStep).toHaveLength(1);
    expect(calls.abandonStep).toEqual([]);
  });

  it('fails the run on the fast path with the terminal details the activity committed, without abandonStep', async () => {
    const details: TerminalDetails = { status: 'FAILED', terminalReason: 'non_retryable', errorCode: 'INVALID_AMOUNT', stepIndex: 1, transitionKey: 'x:1:1' };
    const { error, calls } = await run(runInput({ steps: [fast('a'), fast('b'), fast('c')] }), {
      runStep: async (req) => {
        if (req.stepIndex === 1) throw terminal(details);
        return { output: req.input };
      },
      abandonStep: async () => ({ status: 'FAILED', terminalReason: 'retry_exhausted', errorCode: 'STEP_ABANDONED', stepIndex: 1, transitionKey: 'x:1:1' }),
    });
    const failure = (error as WorkflowFailedError).cause as ApplicationFailure;
    expect(failure.type).toBe(FailureTypes.terminal);
    expect(failure.details?.[0]).toEqual(details);
    // The step's own failure, bare: what the workflow received from the local activity.
    expect(failure.cause).toBeInstanceOf(ApplicationFailure);
    expect(calls.runStep).toHaveLength(2);
    expect(calls.abandonStep).toEqual([]);
  });

  it('falls back to abandonStep once after limit + 1 + 10 attempts end without a committed outcome', async () => {
    const input = runInput({ steps: [step('crashy', 2), step('never')] });
    const abandoned: TerminalDetails = {
      status: 'FAILED',
      terminalReason: 'retry_exhausted',
      errorCode: 'STEP_ABANDONED',
      stepIndex: 0,
      transitionKey: 'x:0:3',
    };
    const { error, calls } = await run(input, {
      // A worker that keeps dying looks like this to the workflow: a retryable failure, attempt after attempt.
      runStep: async () => {
        throw ApplicationFailure.create({ type: FailureTypes.retryable, message: 'worker lost' });
      },
      abandonStep: async () => abandoned,
    });
    expect(calls.runStep).toHaveLength(2 + 1 + 10);
    // The run's first step: the run's dispatch goes with it (a record still QUEUED for it was never taken).
    expect(calls.abandonStep).toEqual([
      {
        tenantId: 't',
        executionId: input.executionId,
        stepIndex: 0,
        stepName: 'crashy',
        transport: 'LOCAL',
        reason: expect.stringContaining('worker lost'),
        dispatchId: 'start',
      },
    ]);
    const failure = (error as WorkflowFailedError).cause as ApplicationFailure;
    expect(failure.details?.[0]).toEqual(abandoned);
  });

  it("names no dispatch when the step given up is not the run's first (the run took the record on its first)", async () => {
    const input = runInput({ steps: [step('fine'), step('crashy', 0)] });
    const { calls } = await run(input, {
      runStep: async (req) => {
        if (req.stepIndex === 0) return { output: req.input };
        throw ApplicationFailure.create({ type: FailureTypes.retryable, message: 'worker lost' });
      },
      abandonStep: async () => ({ status: 'FAILED', terminalReason: 'retry_exhausted', errorCode: 'STEP_ABANDONED', stepIndex: 1, transitionKey: 'x:1:1' }),
    });
    expect(calls.runStep).toHaveLength(1 + 0 + 1 + 10);
    expect(calls.abandonStep).toEqual([
      { tenantId: 't', executionId: input.executionId, stepIndex: 1, stepName: 'crashy', transport: 'LOCAL', reason: expect.stringContaining('worker lost') },
    ]);
  });
});
