import { spawnSync } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

describe('createLog', () => {
  it("calls flush's callback only once the lines logged before it are written: a line written after it lands below them", () => {
    // A process whose stdout and stderr are one file, as in a terminal: many log lines, then
    // flush, then one line on stderr (as the service's last words on Ctrl-C).
    const dir = mkdtempSync(join(tmpdir(), 'log-order-'));
    try {
      const file = join(dir, 'out');
      const fd = openSync(file, 'w');
      const script = `
        const { createLog } = require('./src/log.ts');
        const log = createLog({ level: 'info' });
        for (let i = 0; i < 3000; i++) log.info({ event: 'line', i, pad: 'x'.repeat(200) });
        log.flush(() => process.stderr.write('LAST\\n', () => process.exit(0)));
      `;
      const result = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], { stdio: ['ignore', fd, fd], cwd: process.cwd(), timeout: 60_000 });
      closeSync(fd);
      expect(result.status).toBe(0);
      const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
      expect(lines).toHaveLength(3001);
      expect(lines.at(-1)).toBe('LAST');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
