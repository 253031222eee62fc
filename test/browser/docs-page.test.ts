/**
 * The API reference as a person opens it, in headless Chromium against the real service on a
 * loopback port: it renders without a token (no prompt), groups routes by tag, badges
 * package.json's version, shows no -9007199254740991 examples, and "Try it out" works once the
 * page's own Authorize button holds a token. Writes .data/screenshots/api-reference.png.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { ADMIN_TOKEN, startTestEngine, type TestEngine } from '../helpers/engine';
import { chromiumMissing, launchChromium, screenshotPath } from '../helpers/browser';
import { scaled } from '../helpers/time-scale';

const VERSION = JSON.parse(readFileSync('package.json', 'utf8')).version;
let engine: TestEngine;
let base: string;

describe.skipIf(chromiumMissing)(`the API reference in a browser${chromiumMissing ? ` (skipped: ${chromiumMissing})` : ''}`, () => {
  beforeAll(async () => {
    engine = await startTestEngine(
      [definePipeline({ name: 'ok', steps: [localStep('echo', (input: unknown) => input)] })],
      { 'pipeline.server.port': 0 },
      { http: true },
    );
    base = `http://127.0.0.1:${engine.service.ports.http!}`;
    await engine.start('acme', { pipeline: 'ok', executionId: 'docs-1', input: {} });
    await engine.waitFor('acme', 'docs-1', ['SUCCEEDED']);
  });
  afterAll(async () => engine?.stop());

  it('renders without a token, grouped by tag, with the real version; Try it out authorises with the Authorize button', async () => {
    const chromium = await launchChromium();
    try {
      const page = await chromium.browser.newPage();
      let dialogs = 0;
      page.on('dialog', (dialog) => {
        dialogs++;
        void dialog.dismiss();
      });
      // The page's content security policy must not block anything the reference needs.
      const blocked: string[] = [];
      page.on('console', (message) => {
        if (/Content Security Policy|Refused to/.test(message.text())) blocked.push(message.text());
      });
      await page.goto(`${base}/pipeline/docs`);
      await page.waitForSelector('body[data-reference="ready"]', { timeout: scaled(60_000) });
      await page.waitForSelector('.opblock-tag-section', { timeout: scaled(60_000) });
      expect(dialogs).toBe(0);
      expect(blocked).toEqual([]);
      expect((await page.locator('.info .version').first().textContent())?.trim()).toBe(VERSION);
      const tags = await page.locator('.opblock-tag').evaluateAll((els) => els.map((el) => el.getAttribute('data-tag')));
      expect(tags).toEqual(expect.arrayContaining(['submit', 'executions', 'dlq', 'redrive-jobs', 'health']));
      expect(await page.content()).not.toContain('9007199254740991');

      // Authorize with the page's own button, then "Try it out" on reading the record.
      await page.click('button.authorize');
      await page.fill('.modal-ux input[type=text], .modal-ux input[type=password]', ADMIN_TOKEN);
      await page.click('.modal-ux button.authorize');
      await page.click('.modal-ux button.btn-done');
      const operation = page.locator('#operations-executions-get_pipeline_admin_tenants__tenantId__executions__executionId_');
      const fallback = page
        .locator('.opblock-get', { hasText: '/pipeline/admin/tenants/{tenantId}/executions/{executionId}' })
        .filter({ hasNotText: 'effects' })
        .filter({ hasNotText: 'history' })
        .first();
      const block = (await operation.count()) > 0 ? operation : fallback;
      await block.locator('.opblock-summary').click();
      await block.locator('button.try-out__btn').click();
      await block.locator('input[placeholder="tenantId"]').fill('acme');
      await block.locator('input[placeholder="executionId"]').fill('docs-1');
      await block.locator('button.execute').click();
      const status = block.locator('.live-responses-table tr.response .response-col_status').first();
      await status.waitFor({ timeout: scaled(30_000) });
      expect((await status.textContent())?.trim()).toBe('200');
      expect(await block.locator('.live-responses-table .microlight').first().textContent()).toContain('"SUCCEEDED"');
      await page.screenshot({ path: screenshotPath('api-reference.png'), fullPage: false });
      expect(blocked).toEqual([]); // "Try it out" too
    } finally {
      await chromium.close();
    }
  });
});
