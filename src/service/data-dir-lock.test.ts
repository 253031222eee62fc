import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../errors';
import { createServer } from 'node:net';
import { cleanUpMainProcesses, startMainExpectingExit } from '../../test/helpers/main-process';
import { assertDataDirFree, lockDataDir } from './data-dir-lock';

afterAll(cleanUpMainProcesses);

describe('lockDataDir', () => {
  it('refuses a data dir another running service holds, naming the key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'datadir-'));
    const other = spawn('sleep', ['60']);
    try {
      writeFileSync(join(dir, 'service.pid'), `${other.pid}\n`);
      expect(() => lockDataDir(dir)).toThrow(ConfigError);
      expect(() => lockDataDir(dir)).toThrow(/pipeline\.data-dir: .* in use by another running service/);
      expect(readFileSync(join(dir, 'service.pid'), 'utf8').trim()).toBe(String(other.pid));
    } finally {
      other.kill('SIGKILL');
    }
  });

  it('takes over a file left by a service that is gone, and releases it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'datadir-'));
    const gone = spawnSync('true').pid;
    writeFileSync(join(dir, 'service.pid'), `${gone}\n`);
    const release = lockDataDir(dir);
    expect(readFileSync(join(dir, 'service.pid'), 'utf8').trim()).toBe(String(process.pid));
    release();
    expect(existsSync(join(dir, 'service.pid'))).toBe(false);
  });

  it('npm start checks the data dir before any port: a second start names the running pid, not a port', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'datadir-'));
    const other = spawn('sleep', ['60']);
    // The demo's REST port is taken too: the data dir must be what is reported.
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      writeFileSync(join(dir, 'service.pid'), `${other.pid}\n`);
      expect(() => assertDataDirFree(dir)).toThrow(`in use by another running service (pid ${other.pid})`);
      // Every other port 0 (the helper's fresh settings): only the data dir and this port are contested.
      const started = await startMainExpectingExit({ PIPELINE_DATA_DIR: dir, PIPELINE_DEMO_REST_PORT: String(port) });
      expect(started.code, started.output.stderr).toBe(2);
      expect(started.output.stderr).toContain(`pipeline.data-dir: ${dir} is in use by another running service (pid ${other.pid})`);
      expect(started.output.stderr).not.toContain('pipeline.demo.rest-port');
    } finally {
      other.kill('SIGKILL');
      taken.close();
    }
  });
});
