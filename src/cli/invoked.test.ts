import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { invokedAs } from './invoked';

const cwd = '/work/checkout';

describe('invokedAs: hints name the CLI the way it was started', () => {
  it('npx (npm exec running the bin): npx pipeline-admin', () => {
    expect(invokedAs({ argv: ['node', `${cwd}/node_modules/.bin/pipeline-admin`], execArgv: [], env: { npm_command: 'exec' }, cwd })).toBe(
      'npx pipeline-admin',
    );
    expect(invokedAs({ argv: ['node', `${cwd}/bin/pipeline-admin.mjs`], execArgv: [], env: { npm_command: 'exec' }, cwd })).toBe('npx pipeline-admin');
  });

  it('node dist/cli.js, also from inside an npm script (which leaves npm_command in the environment)', () => {
    expect(invokedAs({ argv: ['node', `${cwd}/dist/cli.js`], execArgv: [], env: {}, cwd })).toBe('node dist/cli.js');
    expect(invokedAs({ argv: ['node', `${cwd}/dist/cli.js`], execArgv: [], env: { npm_command: 'exec' }, cwd })).toBe('node dist/cli.js');
    expect(invokedAs({ argv: ['node', `${cwd}/src/cli/main.ts`], execArgv: ['--import', 'tsx'], env: {}, cwd })).toBe('node --import tsx src/cli/main.ts');
  });

  it('pipeline-admin when that name on PATH is this file; the path otherwise', () => {
    const dir = mkdtempSync(join(tmpdir(), 'invoked-'));
    const target = join(dir, 'pipeline-admin.mjs');
    writeFileSync(target, '');
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    symlinkSync(target, join(bin, 'pipeline-admin'));
    expect(invokedAs({ argv: ['node', join(bin, 'pipeline-admin')], execArgv: [], env: { PATH: bin }, cwd })).toBe('pipeline-admin');
    expect(invokedAs({ argv: ['node', join(bin, 'pipeline-admin')], execArgv: [], env: { PATH: '/usr/bin' }, cwd })).toBe(join(bin, 'pipeline-admin'));
    expect(invokedAs({ argv: ['node', `${cwd}/node_modules/.bin/pipeline-admin`], execArgv: [], env: { PATH: '/usr/bin' }, cwd })).toBe(
      'node_modules/.bin/pipeline-admin',
    );
  });
});
