/**
 * docker-compose.yml holds up on a first start: Postgres and Temporal have healthchecks, the
 * UI and the pipeline services wait for `service_healthy` and restart, the UI image is the
 * release `npm start`'s dev server serves, and Debian's docker-compose validates the file
 * (skipped with a message when docker-compose is absent; .ci/run installs it).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const file = join(root, 'docker-compose.yml');
const text = readFileSync(file, 'utf8');
const composeMissing =
  spawnSync('docker-compose', ['version'], { encoding: 'utf8' }).status === 0 ? undefined : 'docker-compose is absent (apt-get install docker-compose)';

/** Each top-level service's block of lines (two-space indented names under `services:`). */
function services(): Record<string, string> {
  const body = text.slice(text.indexOf('\nservices:\n'), text.indexOf('\nvolumes:\n'));
  const parts = body.split(/^ {2}(?=[a-z][\w-]*:\s*$)/m).slice(1);
  return Object.fromEntries(parts.map((part) => [part.slice(0, part.indexOf(':')), part]));
}

describe('docker-compose.yml', () => {
  it('has healthchecks for Postgres and Temporal, and everything after them waits for service_healthy and restarts', () => {
    const all = services();
    expect(Object.keys(all)).toEqual(['postgres', 'temporal', 'temporal-ui', 'pipeline-api', 'pipeline-worker']);
    expect(all.postgres).toContain('healthcheck:');
    expect(all.temporal).toContain('healthcheck:');
    expect(all.temporal).toMatch(/postgres:\s+condition: service_healthy/);
    for (const name of ['temporal-ui', 'pipeline-api', 'pipeline-worker']) expect(all[name], name).toMatch(/temporal:\s+condition: service_healthy/);
    // The README's promise: `restart: unless-stopped` brings back anything that exits, Postgres too.
    for (const [name, block] of Object.entries(all)) expect(block, name).toContain('restart: unless-stopped');
    expect(text).not.toContain('service_started');
    expect(all['pipeline-api']).toContain('PIPELINE_TEMPORAL_CONNECT_WAIT');
  });

  it("runs the Temporal UI release that npm start's dev server serves", () => {
    const temporal = join(root, '.tools/pip/bin/temporal');
    const image = /image: temporalio\/ui:(\S+)/.exec(text)![1];
    if (!existsSync(temporal)) return; // the version is read from the CLI npm start installs
    const ui = /UI (\d+\.\d+\.\d+)/.exec(execFileSync(temporal, ['--version'], { encoding: 'utf8' }))![1];
    expect(image).toBe(ui);
  });

  it.skipIf(composeMissing)(
    `is valid for docker-compose, and refuses to render without PIPELINE_AUTH_TOKENS${composeMissing ? ` (skipped: ${composeMissing})` : ''}`,
    () => {
      const env = { ...process.env };
      delete env.PIPELINE_AUTH_TOKENS;
      const valid = spawnSync('docker-compose', ['-f', file, 'config', '-q'], { encoding: 'utf8', env: { ...env, PIPELINE_AUTH_TOKENS: '[]' } });
      expect(valid.status, valid.stderr).toBe(0);
      // As docker-compose reads it: every service it renders restarts unless stopped.
      const rendered = spawnSync('docker-compose', ['-f', file, 'config'], { encoding: 'utf8', env: { ...env, PIPELINE_AUTH_TOKENS: '[]' } }).stdout;
      const renderedServices = rendered
        .slice(rendered.indexOf('services:'), rendered.search(/^volumes:/m))
        .split(/^ {2}(?=[a-z][\w-]*:\s*$)/m)
        .slice(1);
      expect(renderedServices).toHaveLength(5);
      for (const block of renderedServices) expect(block, block.slice(0, 40)).toContain('restart: unless-stopped');
      const missing = spawnSync('docker-compose', ['-f', file, 'config', '-q'], { encoding: 'utf8', env });
      expect(missing.status).not.toBe(0);
      expect(missing.stderr).toContain('set PIPELINE_AUTH_TOKENS');
    },
  );
});
