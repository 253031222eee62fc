/**
 * What the Temporal UI tells, read from the real dev server: a re-drive's run links to
 * the run it re-drives (`PipelineRedriveOf`, searchable), a bulk job's runs are found by
 * its id (`PipelineRedriveJob`), and the activity summary and failure messages name the
 * transition identity, not Temporal's attempt counter, which restarts in every run.
 */
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workflowIdFor } from '../../src/ids';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { PipelineRedriveJob, PipelineRedriveOf } from '../../src/workflows/search-attributes';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { until } from '../helpers/until';

let engine: TestEngine;
const healthy = new Set<string>();
/** the transition identities the charge step ran as */
const ran: string[] = [];
const pipelines = [
  // The charge: one activity that fails five times and succeeds on its sixth attempt.
  definePipeline({
    name: 'charging',
    steps: [
      localStep(
        'charge',
        (input: unknown, ctx) => {
          ran.push(ctx.transitionKey);
          if (ctx.attempt < 6) throw Object.assign(new Error('card network down'), { code: 'CARD_NETWORK_DOWN' });
          return input;
        },
        { retry: { limit: 5, waitMs: 1, maxBackoffMs: 1, jitter: false } },
      ),
    ],
  }),
  definePipeline({
    name: 'links',
    steps: [
      localStep(
        'call',
        (input: unknown, ctx) => {
          if (healthy.has(ctx.executionId)) return input;
          throw Object.assign(new Error('dependency down'), { code: 'DEPENDENCY_DOWN' });
        },
        { retry: { limit: 1 } },
      ),
    ],
  }),
];

/** This engine's runs: its pipeline queue, and the bulk jobs' own queue (`pipeline.redrive-job.task-queue`'s default). */
const list = async (query: string) => {
  const found: { workflowId: string; runId: string; type: string }[] = [];
  const queues = `'${engine.taskQueue}', '${engine.taskQueue}-redrive-jobs'`;
  for await (const run of engine.service.client.workflow.list({ query: `TaskQueue IN (${queues}) AND ${query}` }))
    found.push({ workflowId: run.workflowId, runId: run.runId, type: run.type });
  return found;
};

/** The activity summaries and failure messages of one run's history. */
async function activityTexts(workflowId: string, runId: string) {
  const history = await engine.service.client.workflow.getHandle(workflowId, runId).fetchHistory();
  const summaries: string[] = [];
  const failures: string[] = [];
  for (const event of history.events ?? []) {
    if (event.activityTaskScheduledEventAttributes && event.userMetadata?.summary)
      summaries.push(defaultPayloadConverter.fromPayload(event.userMetadata.summary as Payload));
    if (event.activityTaskFailedEventAttributes?.failure?.message) failures.push(event.activityTaskFailedEventAttributes.failure.message);
  }
  return { summaries, failures };
}

beforeAll(async () => {
  engine = await startTestEngine(pipelines);
  for (const id of ['one', 'job-a', 'job-b']) await engine.start('links', { pipeline: 'links', executionId: id, input: {} });
  for (const id of ['one', 'job-a', 'job-b']) await engine.waitFor('links', id, ['FAILED']);
});
afterAll(async () => engine?.stop());

describe('the Temporal UI tells the same story', () => {
  it('links a re-drive to the run it re-drives, and names transition identities in summaries and failures', async () => {
    const failed = await engine.service.store.get('links', 'one');
    const previousRunId = failed!.runId!;
    expect(previousRunId).toEqual(expect.any(String));
    healthy.add('one');
    const res = await engine.request('POST', '/admin/tenants/links/executions/one/redrive', {
      body: { expectedVersion: failed!.version, reason: 'dependency back', allowFailed: true },
    });
    expect(res.status).toBe(202);
    const { runId } = await res.json();
    await engine.waitFor('links', 'one', ['SUCCEEDED']);

    const described = await engine.service.client.workflow.getHandle(workflowIdFor('links', 'one'), runId).describe();
    expect(described.typedSearchAttributes.get(PipelineRedriveOf)).toBe(previousRunId);
    expect(described.typedSearchAttributes.get(PipelineRedriveJob)).toBeUndefined();
    let found: Awaited<ReturnType<typeof list>> = [];
    await until(async () => (found = await list(`PipelineRedriveOf = '${previousRunId}'`)).length > 0, 30_000, 'the re-drive to be searchable');
    expect(found.map((run) => run.runId)).toEqual([runId]);

    // The failed run: attempts 1 and 2 (Temporal attempts 1 and 2); the re-drive's run starts at attempt 3 on Temporal attempt 1.
    const first = await activityTexts(workflowIdFor('links', 'one'), previousRunId);
    // One activity ran both attempts: its summary, written when it was scheduled, names the range they fall in.
    expect(first.summaries).toEqual([`step 0 call · LOCAL · transition one:0:1, retries up to one:0:2`]);
    expect(first.failures).toEqual([expect.stringMatching(/^transition one:0:2 failed, retry_exhausted: DEPENDENCY_DOWN: dependency down$/)]);
    const second = await activityTexts(workflowIdFor('links', 'one'), runId);
    expect(second.summaries).toEqual([`step 0 call · LOCAL · transition one:0:3, retries up to one:0:4`]);
  });

  it("an activity's summary names every transition its attempts ran as: the first, and the last its retries reach", async () => {
    await engine.start('links', { pipeline: 'charging', executionId: 'charge-1', input: {} });
    const record = await engine.waitFor('links', 'charge-1', ['SUCCEEDED', 'FAILED']);
    expect(record.status).toBe('SUCCEEDED');
    await engine.service.client.workflow.getHandle(record.workflowId).result();
    const { summaries } = await activityTexts(record.workflowId, record.runId!);
    // One activity, six attempts (one scheduled event): before, its summary said only charge-1:0:1.
    expect(ran).toEqual([1, 2, 3, 4, 5, 6].map((n) => `charge-1:0:${n}`));
    expect(summaries).toEqual(['step 0 charge · LOCAL · transition charge-1:0:1, retries up to charge-1:0:6']);
  });

  it('finds every run of a bulk job, and the job itself, by the job id', async () => {
    healthy.add('job-a').add('job-b');
    const res = await engine.request('POST', '/admin/tenants/links/redrive-jobs', {
      body: { selection: { executionIds: ['job-a', 'job-b'] }, reason: 'dependency back', allowFailed: true },
    });
    expect(res.status).toBe(202);
    const job = await res.json();
    await until(async () => (await engine.service.jobs.get('links', job.jobId)).status === 'COMPLETED', 60_000, 'the job to complete');
    let found: Awaited<ReturnType<typeof list>> = [];
    await until(async () => (found = await list(`PipelineRedriveJob = '${job.jobId}'`)).length >= 3, 30_000, 'the job and its runs to be searchable');
    expect(found.map((run) => [run.type, run.workflowId]).sort()).toEqual([
      ['pipelineWorkflow', workflowIdFor('links', 'job-a')],
      ['pipelineWorkflow', workflowIdFor('links', 'job-b')],
      ['redriveJobWorkflow', `redrive-job/links/${job.jobId}`],
    ]);
  });
});
