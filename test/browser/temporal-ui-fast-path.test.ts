/**
 * What an engineer sees of a fast-path execution in the Temporal UI: one local-activity marker
 * per step, each with the summary a regular step's activity has (step, transport, "fast path",
 * transition identity), and a failed attempt's marker carrying its failure. Read from the
 * history (what the UI renders) and from the UI's own history page in headless Chromium; a
 * screenshot is written to .data/screenshots/temporal-ui-fast-path.png.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { chromiumMissing, launchChromium, screenshotPath } from '../helpers/browser';

let dev: DevServer;
let engine: TestEngine;

const pipelines = [
  definePipeline({
    name: 'quick',
    fastPath: true,
    retry: { limit: 2, waitMs: 20, maxBackoffMs: 20, jitter: false },
    steps: [
      localStep('validate', (input: unknown) => input),
      localStep('charge', (input: unknown, ctx) => {
        if (ctx.attempt === 1) throw Object.assign(new Error('card service busy'), { code: 'CARD_BUSY' });
        return input;
      }),
      localStep('notify', (input: unknown) => input),
    ],
  }),
];

describe.skipIf(chromiumMissing)(`a fast-path execution in the Temporal UI${chromiumMissing ? ` (skipped: ${chromiumMissing})` : ''}`, () => {
  beforeAll(async () => {
    dev = await startDevServer({ uiPort: 0 });
    engine = await startTestEngine(pipelines, { 'pipeline.temporal.address': dev.address });
  });
  afterAll(async () => {
    await engine?.stop();
    await dev?.stop();
  });

  it('shows a marker per step attempt, named and summarised like a step activity', async () => {
    await engine.start('acme', { pipeline: 'quick', executionId: 'fast-ui', input: { order: 1 } });
    const record = await engine.waitFor('acme', 'fast-ui', ['SUCCEEDED', 'FAILED']);
    expect(record.status).toBe('SUCCEEDED');
    const handle = engine.service.client.workflow.getHandle(record.workflowId);
    await handle.result();
    const history = await handle.fetchHistory();
    const markers = history.events!.filter((event) => event.markerRecordedEventAttributes?.markerName === 'core_local_activity');
    const summaries = await Promise.all(
      markers.map(async (event) => {
        const payload = event.userMetadata?.summary;
        return payload ? await engine.service.client.options.loadedDataConverter.payloadConverter.fromPayload<string>(payload) : undefined;
      }),
    );
    // Three steps, each one marker: the failed attempt and its retry are one local activity's (the
    // marker records its last attempt), and the retry runs as transition 1:2.
    expect(summaries).toEqual([
      'step 0 validate · LOCAL · fast path · transition fast-ui:0:1, retries up to fast-ui:0:3',
      'step 1 charge · LOCAL · fast path · transition fast-ui:1:1, retries up to fast-ui:1:3',
      'step 2 notify · LOCAL · fast path · transition fast-ui:2:1, retries up to fast-ui:2:3',
    ]);
    expect(history.events!.filter((event) => event.activityTaskScheduledEventAttributes)).toEqual([]);
    expect((await engine.service.store.get('acme', 'fast-ui'))?.version).toBe(6);

    const chromium = await launchChromium();
    try {
      const page = await chromium.browser.newPage();
      const { runId } = await handle.describe();
      await page.goto(`http://127.0.0.1:${dev.uiPort!}/namespaces/default/workflows/${encodeURIComponent(record.workflowId)}/${runId}/history`);
      await page.getByText('step 1 charge · LOCAL · fast path', { exact: false }).first().waitFor({ timeout: 60_000 });
      await page.screenshot({ path: screenshotPath('temporal-ui-fast-path.png'), fullPage: true });
    } finally {
      await chromium.close();
    }
  });
});
