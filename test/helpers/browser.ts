/**
 * Headless Chromium (Debian's `chromium`) driven by playwright-core, for the tests that look
 * at a page as a person would: the API reference and the Temporal UI. Each launch gets a
 * fresh profile and no background traffic. Screenshots go to `.data/screenshots/` (ignored
 * by git) so a person can look at what the test saw.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const chromiumMissing = existsSync(CHROMIUM)
  ? undefined
  : `${CHROMIUM} is absent: install Debian's chromium (apt-get install -y chromium; .ci/run does) to run the browser tests`;

export const SCREENSHOTS = resolve('.data/screenshots');

/** A fresh profile (a new --user-data-dir) in a temporary directory, removed on close. */
export async function launchChromium(viewport = { width: 1280, height: 1400 }): Promise<{ browser: BrowserContext; close(): Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), 'chromium-profile-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    browser,
    async close() {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export function screenshotPath(name: string): string {
  mkdirSync(SCREENSHOTS, { recursive: true });
  return join(SCREENSHOTS, name);
}
