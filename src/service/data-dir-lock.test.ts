import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../errors';
import { lockDataDir } from './data-dir-lock';

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
});
