/**
 * The Temporal UI tells the truth about a bulk re-drive job, read in headless Chromium from
 * the Web UI of this test's own dev server: a canary-halted job's page shows, in its current
 * details, that it is PAUSED, halted by the system and why, its progress, who started it
 * and why, and the CLI command to inspect it; a run the job re-drove shows the re-drive's
 * principal and reason and links to the run it re-drives. The same details are read through
 * the workflow's metadata query (what the UI asks), and a screenshot is written to
 * .data/screenshots/temporal-ui-halted-job.png.
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
    for (const executionId of IDS) await engine.waitFor('acme', executionId, ['FAILED']);
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
});
