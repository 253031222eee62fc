/**
 * Replay: every recorded history in test/fixtures/histories/ must replay on today's
 * workflow code without a non-determinism error, so a change that would break executions
 * in flight fails CI. Histories are captured from the real engine with
 * scripts/capture-histories.ts; docs/replay.md says when to capture and how to change the
 * workflow with `patched()` instead of re-capturing.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { WORKFLOWS_PATH } from '../../src/temporal/worker';
import { readHistory } from '../helpers/history';
import { scaled } from '../helpers/time-scale';

const HISTORIES = join(import.meta.dirname, '..', 'fixtures', 'histories');
const files = readdirSync(HISTORIES)
  .filter((file) => file.endsWith('.json'))
  .sort();
const histories = files.map((file) => ({ workflowId: file.replace(/\.json$/, ''), history: readHistory(join(HISTORIES, file)) }));
/** The workflow type a history ran (from its first event). */
const workflowType = (h: (typeof histories)[number]) => h.history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name;

/**
 * The histories of runs planned on the fast path (scripts/capture-histories.ts: fast-path,
 * fast-path-redrive-failed, pipeline-fast-path-bare-failure).
 */
const FAST_PATH = ['fast-path', 'fast-path-non-retryable', 'fast-path-redrive-failed', 'pipeline-fast-path-bare-failure', 'fast-path-foreign-run-fails'];

/** Every path of the workflow a history must cover (scripts/capture-histories.ts makes them). */
const REQUIRED = [
  'success',
  'retries',
  'terminal-non-retryable',
  'terminal-retry-exhausted',
  'terminal-command-retryable',
  'outcome-unknown',
  'redrive-ordinary',
  'redrive-failed',
  'redrive-retry-failed-command',
  'redrive-remote-outcome-unknown',
  // a run that schedules each step under its own activity type (the histories above schedule `runStep`)
  'step-activity-types',
  // the bulk re-drive job's workflow: canary, halt, resume, finish
  'redrive-job',
  // …and a job's run that continued as new past its canary, and the run that carried on
  'redrive-job-continued-as-new',
  'redrive-job-after-continue-as-new',
  // the paths behind a patch, each taken by a history: a reset run the orchestrator did not start
  // fails saying so, and "Request Cancellation" aborts a bulk job
  'pipeline-foreign-run-fails',
  'redrive-job-cancel-aborts',
  // a bulk job yielding to live traffic: it steers its own rate by its admissions' times
  'redrive-job-yield',
  // PipelineJobStatus kept current, and an abort through the API ending the job's workflow Canceled
  'redrive-job-status-shown',
  // a Reset copy of a bulk job's run, past its step: it drops the lineage attributes it inherited
  'pipeline-reset-drops-lineage',
  // the fast path (LOCAL steps as local activities, one marker per step): a local retry, a
  // non-retryable failure, and the re-drive of that FAILED execution on the fast path; and, behind
  // the pipeline-fast-path-bare-failure patch, a non-retryable failure read bare (no abandonStep)
  // and a Reset copy of such a run refused as not started by the orchestrator
  ...FAST_PATH,
];

/** Every patch id the workflow code asks for (`patched('…')`, `deprecatePatch('…')`). */
function patchIds(): string[] {
  const dir = join(import.meta.dirname, '..', '..', 'src', 'workflows');
  return readdirSync(dir)
    .filter((file) => file.endsWith('.ts'))
    .flatMap((file) => [...readFileSync(join(dir, file), 'utf8').matchAll(/\b(?:patched|deprecatePatch)\(\s*'([^']+)'/g)].map((m) => m[1]));
}

/** The patch ids recorded in a history's core_patch markers. */
function recordedPatches(h: (typeof histories)[number]): string[] {
  return (h.history.events ?? []).flatMap((event) => {
    const marker = event.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_patch') return [];
    const data = marker.details?.['patch-data']?.payloads?.[0]?.data;
    return data ? [JSON.parse(Buffer.from(data as Uint8Array).toString('utf8')).id as string] : [];
  });
}

/** Whether a pipeline run's plan put any step on the fast path (its input, from the first event). */
function plannedFast(h: (typeof histories)[number]): boolean {
  const payload = h.history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
  const input = JSON.parse(Buffer.from(payload!.data as Uint8Array).toString('utf8')) as {
    steps: { fastPath?: boolean }[];
    stepDefaults?: { fastPath?: boolean };
  };
  return input.stepDefaults?.fastPath === true || input.steps.some((step) => step.fastPath === true);
}

/** How many steps a history ran as regular activities (scheduled) and as local activities (markers). */
function stepEvents(h: (typeof histories)[number]) {
  const events = h.history.events ?? [];
  return {
    scheduled: events.filter((event) => event.activityTaskScheduledEventAttributes).length,
    markers: events.filter((event) => event.markerRecordedEventAttributes?.markerName === 'core_local_activity').length,
  };
}

async function replayAll(workflowBundle: WorkflowBundleWithSourceMap, only = histories) {
  const failures: string[] = [];
  for await (const result of Worker.runReplayHistories({ workflowBundle, replayName: 'replay-suite' }, only)) {
    if (result.error) failures.push(`${result.workflowId}: ${result.error.name}: ${result.error.message.split('\n')[0]}`);
  }
  return failures;
}

describe('recorded histories replay on the current workflow', () => {
  beforeAll(() => {
    // The drifted replay makes core warn once per history; the assertions say what failed.
    Runtime.install({ logger: new DefaultLogger('WARN'), telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } } });
  });

  it('covers success, retries, each terminal outcome and each re-drive mode', () => {
    expect(histories.map((h) => h.workflowId)).toEqual(expect.arrayContaining(REQUIRED));
  });

  it('covers every patched path: each patch the workflow code asks for is recorded by a history that took it', () => {
    const ids = patchIds();
    expect(ids).toEqual(
      expect.arrayContaining([
        'pipeline-foreign-run-fails',
        'redrive-job-cancel-aborts',
        'redrive-job-yield',
        'redrive-job-status-shown',
        'pipeline-reset-drops-lineage',
        'pipeline-fast-path-bare-failure',
      ]),
    );
    const recorded = new Set(histories.flatMap(recordedPatches));
    expect(ids.filter((id) => !recorded.has(id))).toEqual([]);
    expect(recordedPatches(histories.find((h) => h.workflowId === 'pipeline-foreign-run-fails')!)).toEqual(['pipeline-foreign-run-fails']);
    expect(recordedPatches(histories.find((h) => h.workflowId === 'redrive-job-cancel-aborts')!)).toEqual(['redrive-job-cancel-aborts']);
    expect(recordedPatches(histories.find((h) => h.workflowId === 'pipeline-fast-path-bare-failure')!)).toEqual(['pipeline-fast-path-bare-failure']);
    expect(recordedPatches(histories.find((h) => h.workflowId === 'fast-path-foreign-run-fails')!)).toEqual([
      'pipeline-fast-path-bare-failure',
      'pipeline-foreign-run-fails',
    ]);
  });

  it("covers both readings of a fast-path step's terminal failure: before the patch one abandonStep marker after it, after it none", () => {
    const localActivities = (workflowId: string) =>
      histories
        .find((h) => h.workflowId === workflowId)!
        .history.events!.flatMap((event) => {
          const marker = event.markerRecordedEventAttributes;
          if (marker?.markerName !== 'core_local_activity') return [];
          return [(JSON.parse(Buffer.from(marker.details!.data!.payloads![0].data as Uint8Array).toString('utf8')) as { activity_type: string }).activity_type];
        });
    expect(localActivities('fast-path-non-retryable')).toEqual(['replay-fast-validate:prepare', 'replay-fast-validate:validate', 'abandonStep']);
    expect(localActivities('pipeline-fast-path-bare-failure')).toEqual(['replay-fast-validate:prepare', 'replay-fast-validate:validate']);
    expect(localActivities('fast-path-foreign-run-fails')).toEqual(['replay-fast-validate:prepare']);
  });

  it('covers both activity types of a step: runStep (runs started before step-named types) and `<pipeline>:<step>`', () => {
    const scheduledTypes = (workflowId: string) =>
      histories
        .find((h) => h.workflowId === workflowId)!
        .history.events!.flatMap((event) => event.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
    expect(scheduledTypes('retries')).toEqual(['runStep']);
    expect(scheduledTypes('step-activity-types')).toEqual(['replay-flaky:flaky']);
  });

  it('covers runs on the fast path (local-activity markers) and runs planned before it (regular activities only)', () => {
    const pipelineRuns = histories.filter((h) => workflowType(h) === 'pipelineWorkflow');
    const fast = pipelineRuns.filter((h) => FAST_PATH.includes(h.workflowId));
    expect(fast.map((h) => h.workflowId).sort()).toEqual([...FAST_PATH].sort());
    for (const h of fast) {
      expect(plannedFast(h)).toBe(true);
      expect(stepEvents(h)).toMatchObject({ scheduled: 0, markers: expect.any(Number) });
      expect(stepEvents(h).markers).toBeGreaterThan(0);
    }
    // Every other pipeline history is a run planned before the fast path: no fastPath in its plan, no marker.
    const before = pipelineRuns.filter((h) => !FAST_PATH.includes(h.workflowId));
    expect(before.length).toBeGreaterThanOrEqual(10);
    for (const h of before)
      expect({ id: h.workflowId, fast: plannedFast(h), markers: stepEvents(h).markers }).toEqual({ id: h.workflowId, fast: false, markers: 0 });
  });

  it('replays every history without a non-determinism error', { timeout: scaled(120_000) }, async () => {
    const bundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: new DefaultLogger('WARN') });
    expect(await replayAll(bundle)).toEqual([]);
  });

  it('fails a workflow change made without patched() (a timer before the first step)', { timeout: scaled(120_000) }, async () => {
    const drifted = await bundleWorkflowCode({
      workflowsPath: join(import.meta.dirname, '..', 'fixtures', 'replay', 'drifted-workflow.ts'),
      logger: new DefaultLogger('WARN'),
    });
    // Only the pipeline's histories: the drifted bundle has no re-drive job workflow, and
    // replaying one there fails to initialise it (an ERROR line in a passing run).
    const pipelineHistories = histories.filter((h) => workflowType(h) === 'pipelineWorkflow');
    expect(pipelineHistories.length).toBeGreaterThan(0);
    expect(pipelineHistories.length).toBeLessThan(histories.length);
    const failures = await replayAll(drifted, pipelineHistories);
    expect(failures).toHaveLength(pipelineHistories.length);
    expect(failures[0]).toMatch(/DeterminismViolationError|Nondeterminism/i);
  });
});
