/**
 * The Temporal UI tells the truth about a bulk re-drive job, read in headless Chromium from
 * the Web UI of this test's own dev server: a canary-halted job's page shows, in its current
 * details, that it is PAUSED, halted by the system and why, its progress, who started it
 * and why, and the CLI command to inspect it; a run the job re-drove shows the re-drive's
 * principal and reason and links to the run it re-drives. The same details are read through
 * the workflow's metadata query (what the UI asks), and a screenshot is written to
 * .data/screenshots/temporal-ui-halted-job.png.
 *
 * Each state of a job in the UI's workflow list: RUNNING, PAUSED, HALTED, COMPLETED and
 * ABORTED, each found by the `PipelineJobStatus` search attribute through the visibility API
 * the list reads, and shown in the list filtered by it (one screenshot per state, under
 * .data/screenshots/temporal-ui-job-<state>.png); an aborted job's row says Canceled, never
 * Completed, and the runbook's saved-view query lists the paused and the halted job.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server';
import { workflowIdFor } from '../../src/ids';
import { jobWorkflowId } from '../../src/service/redrive-jobs';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { chromiumMissing, launchChromium, screenshotPath } from '../helpers/browser';
import { until } from '../helpers/until';

let dev: DevServer;
let engine: TestEngine;
const IDS = ['ui-1', 'ui-2', 'ui-3', 'ui-4', 'ui-5', 'ui-6'];
/** Executions of `fixable`: they fail until `fixed`, then a re-drive succeeds. */
const FIXABLE = Array.from({ length: 12 }, (_, i) => `fix-${i + 1}`);
let fixed = false;

const pipelines = [
  definePipeline({
    name: 'ledger',
    steps: [
      localStep(
        'book',
        () => {
          throw Object.assign(new Error('ledger down'), { code: 'LEDGER_DOWN' });
        },
        { retry: { limit: 0 } },
      ),
    ],
  }),
  definePipeline({
    name: 'fixable',
    steps: [
      localStep(
        'post',
        (input: object) => {
          if (!fixed) throw Object.assign(new Error('not yet'), { code: 'NOT_YET' });
          return input;
        },
        { retry: { limit: 0 } },
      ),
    ],
  }),
];

/** The page's text with its frames' (the UI renders markdown details in a frame of their own), once it shows `wanted`. */
async function shownText(page: Page, wanted: string): Promise<string> {
  let text = '';
  await until(
    async () => {
      const parts = await Promise.all(
        page.frames().map((frame) =>
          frame
            .locator('body')
            .innerText()
            .catch(() => ''),
        ),
      );
      text = parts.join('\n');
      return text.includes(wanted);
    },
    60_000,
    `the page to show "${wanted}"`,
  );
  return text;
}

/** Links to a run, in the page or its frames. */
async function linksTo(page: Page, runId: string): Promise<number> {
  const counts = await Promise.all(
    page.frames().map((frame) =>
      frame
        .locator(`a[href*="${runId}"]`)
        .count()
        .catch(() => 0),
    ),
  );
  return counts.reduce((a, b) => a + b, 0);
}

async function json(res: Response, status: number) {
  const body = await res.json();
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${JSON.stringify(body)}`);
  return body;
}

describe.skipIf(chromiumMissing)(`a halted bulk job in the Temporal UI${chromiumMissing ? ` (skipped: ${chromiumMissing})` : ''}`, () => {
  beforeAll(async () => {
    dev = await startDevServer({ uiPort: 0 });
    engine = await startTestEngine(pipelines, { 'pipeline.temporal.address': dev.address });
    for (const executionId of IDS) await engine.start('acme', { pipeline: 'ledger', executionId, input: {} });
    for (const executionId of FIXABLE) await engine.start('acme', { pipeline: 'fixable', executionId, input: {} });
    for (const executionId of [...IDS, ...FIXABLE]) await engine.waitFor('acme', executionId, ['FAILED']);
    fixed = true;
  });
  afterAll(async () => {
    await engine?.stop();
    await dev?.stop();
  });

  it('shows the halt, its reason, the progress, who started it and the command to inspect it', async () => {
    const created = await json(
      await engine.request('POST', '/admin/tenants/acme/redrive-jobs', {
        body: { selection: { executionIds: IDS }, reason: 'ledger back after INC-42', allowFailed: true, canary: 2, ratePerSecond: 5, batchSize: 10 },
      }),
      202,
    );
    const jobId: string = created.jobId;
    const read = async () => json(await engine.request('GET', `/admin/tenants/acme/redrive-jobs/${jobId}`), 200);
    await until(async () => (await read()).status === 'PAUSED', 120_000, 'the canary to halt the job');
    const halted = await read();
    expect(halted.haltReason).toMatch(/^canary of 2: 2 of 2 re-driven items failed again/);

    // What the UI asks the worker for: the workflow's current details.
    const handle = engine.service.client.workflow.getHandle(jobWorkflowId('acme', jobId));
    let details = '';
    await until(
      async () => {
        const metadata = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
        details = metadata.currentDetails ?? '';
        return details.includes('PAUSED');
      },
      60_000,
      'the current details to say PAUSED',
    );
    expect(details).toContain(`**Status PAUSED: halted by the system**: ${halted.haltReason}`);
    expect(details).toContain('**Progress** 2 of 6 items processed (2 admitted, 0 skipped), 4 remaining');
    expect(details).toContain('2 failed again');
    expect(details).toContain('**Started by** test-admin: ledger back after INC-42');
    expect(details).toContain(`npx pipeline-admin jobs show ${jobId} --tenant acme`);
    expect(details).toContain(`npx pipeline-admin jobs abort ${jobId} --tenant acme`);

    const chromium = await launchChromium();
    try {
      const page = await chromium.browser.newPage();
      const ui = `http://127.0.0.1:${dev.uiPort!}/namespaces/default/workflows`;
      const { runId } = await handle.describe();
      await page.goto(`${ui}/${encodeURIComponent(jobWorkflowId('acme', jobId))}/${runId}/history`);
      // This UI (2.5x) shows the summary, details and current details under "User Metadata".
      await page.getByText('User Metadata', { exact: true }).first().click();
      const text = await shownText(page, 'halted by the system');
      expect(text).toContain(halted.haltReason);
      expect(text).toContain('ledger back after INC-42');
      expect(text).toContain(`npx pipeline-admin jobs show ${jobId} --tenant acme`);
      await page.screenshot({ path: screenshotPath('temporal-ui-halted-job.png'), fullPage: true });

      // A run the job re-drove: who and why, and a link to the run it re-drives.
      const redriven = halted.items?.find?.((item: { status: string }) => item.status === 'ADMITTED')?.executionId ?? null;
      const history = async (executionId: string) => json(await engine.request('GET', `/admin/tenants/acme/executions/${executionId}/history`), 200);
      let target = redriven as string | null;
      if (!target) {
        for (const id of IDS) if ((await history(id)).redrives.length > 0) target = id;
      }
      expect(target).not.toBeNull();
      const story = await history(target!);
      const [first, second] = story.runs as { runId: string }[];
      await page.goto(`${ui}/${encodeURIComponent(workflowIdFor('acme', target!))}/${second.runId}/history`);
      await page.getByText('User Metadata', { exact: true }).first().click();
      const runText = await shownText(page, 'Re-driven by');
      expect(runText).toContain('Re-driven by');
      expect(runText).toContain('test-admin');
      expect(await linksTo(page, first.runId)).toBeGreaterThan(0);
      await page.screenshot({ path: screenshotPath('temporal-ui-redriven-run.png'), fullPage: true });
    } finally {
      await chromium.close();
    }
  });

  it('lists each job state by PipelineJobStatus, and an aborted job as Canceled, never Completed', async () => {
    const create = async (executionIds: string[], extra: object) =>
      (
        await json(
          await engine.request('POST', '/admin/tenants/acme/redrive-jobs', {
            body: { selection: { executionIds }, reason: 'states', allowFailed: true, ...extra },
          }),
          202,
        )
      ).jobId as string;
    const read = async (jobId: string) => json(await engine.request('GET', `/admin/tenants/acme/redrive-jobs/${jobId}`), 200);
    const control = async (jobId: string, action: string) =>
      json(await engine.request('POST', `/admin/tenants/acme/redrive-jobs/${jobId}/${action}`, { body: { reason: `test ${action}` } }), 200);
    const status = async (jobId: string, wanted: string) => until(async () => (await read(jobId)).status === wanted, 120_000, `job ${jobId} to be ${wanted}`);

    // HALTED: a canary whose items fail again. COMPLETED: items that succeed now.
    const halted = await create(IDS, { canary: 2, ratePerSecond: 5 });
    const completed = await create(FIXABLE.slice(0, 2), { ratePerSecond: 5 });
    // RUNNING, then PAUSED, then ABORTED: slow jobs of five items each.
    const running = await create(FIXABLE.slice(2, 7), { ratePerSecond: 0.1 });
    const paused = await create(FIXABLE.slice(7, 12), { ratePerSecond: 0.1 });
    await status(halted, 'PAUSED');
    await status(completed, 'COMPLETED');
    await until(async () => (await read(paused)).counts.admitted >= 1, 120_000, 'the job to pause to admit one');
    await control(paused, 'pause');
    // ABORTED: a job held by its own canary (it cannot complete under the abort, however slow the
    // machine), aborted once it has admitted its canary; the halted job's items have failed again by now.
    const aborted = await create(IDS, { canary: 2, ratePerSecond: 5 });
    await status(aborted, 'PAUSED');
    await control(aborted, 'abort');

    // What the UI's list reads: the visibility API with the query.
    const client = engine.service.client;
    const listed = async (query: string) => {
      const ids: string[] = [];
      for await (const run of client.workflow.list({ query })) ids.push(run.workflowId);
      return ids.sort();
    };
    const expected: Record<string, string> = { RUNNING: running, PAUSED: paused, HALTED: halted, COMPLETED: completed, ABORTED: aborted };
    for (const [state, jobId] of Object.entries(expected)) {
      await until(
        async () => (await listed(`PipelineJobStatus = "${state}"`)).includes(jobWorkflowId('acme', jobId)),
        60_000,
        `the visibility API to list job ${jobId} as ${state}`,
      );
    }
    // The runbook's saved view: the jobs waiting for an operator.
    const savedView = 'PipelineJobStatus IN ("PAUSED", "HALTED")';
    const waiting = [paused, halted].map((jobId) => jobWorkflowId('acme', jobId));
    let inView: string[] = [];
    await until(
      async () => {
        inView = await listed(savedView);
        return waiting.every((id) => inView.includes(id));
      },
      60_000,
      'the saved view to list the paused and the halted job',
    );
    expect(inView).not.toContain(jobWorkflowId('acme', running));
    expect(inView).not.toContain(jobWorkflowId('acme', completed));
    expect(inView).not.toContain(jobWorkflowId('acme', aborted));
    // Temporal's own status: an aborted job's workflow is Canceled; a completed one Completed.
    const abortedRun = client.workflow.getHandle(jobWorkflowId('acme', aborted));
    await abortedRun.result().catch(() => undefined);
    expect((await abortedRun.describe()).status.name).toBe('CANCELLED');
    expect((await client.workflow.getHandle(jobWorkflowId('acme', completed)).describe()).status.name).toBe('COMPLETED');
    expect((await client.workflow.getHandle(jobWorkflowId('acme', halted)).describe()).status.name).toBe('RUNNING');

    const chromium = await launchChromium();
    try {
      const page = await chromium.browser.newPage();
      const badge: Record<string, string> = { RUNNING: 'RUNNING', PAUSED: 'RUNNING', HALTED: 'RUNNING', COMPLETED: 'COMPLETED', ABORTED: 'CANCELED' };
      for (const [state, jobId] of Object.entries(expected)) {
        const query = `PipelineJobStatus = "${state}"`;
        await page.goto(`http://127.0.0.1:${dev.uiPort!}/namespaces/default/workflows?query=${encodeURIComponent(query)}`);
        const text = await shownText(page, jobWorkflowId('acme', jobId));
        // The list shows that job alone, with Temporal's status for it.
        for (const other of Object.values(expected).filter((id) => id !== jobId)) expect(text).not.toContain(jobWorkflowId('acme', other));
        // The row: its status badge, then the workflow id, run id, type and times.
        const lines = text.split('\n').map((line) => line.trim());
        const row = lines.findIndex((line) => line.startsWith(jobWorkflowId('acme', jobId)));
        expect(row).toBeGreaterThan(0);
        expect(lines.slice(0, row).filter(Boolean).at(-1)!.toUpperCase()).toBe(badge[state]);
        await page.screenshot({ path: screenshotPath(`temporal-ui-job-${state.toLowerCase()}.png`), fullPage: true });
      }
    } finally {
      await chromium.close();
    }
  });
});
