import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hintFlags, invokedAs, shellWord, tokenWord } from './invoked';

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

describe('hints repeat the settings flags the command was given, so they reach the same service and tenant', () => {
  it('--url, --token-file, --config and --tenant as given; never --token', () => {
    expect(hintFlags({})).toBe('');
    expect(hintFlags({ url: 'http://127.0.0.1:9000/pipeline', tenant: 'acme', tokenFile: '/run/token' })).toBe(
      ' --url http://127.0.0.1:9000/pipeline --token-file /run/token --tenant acme',
    );
    expect(hintFlags({ tenant: 'acme', config: 'ops.json', timeout: '60', token: 'secret' } as never)).toBe(' --config ops.json --tenant acme');
    // A hint that names its own tenant (triage across tenants: TENANT).
    expect(hintFlags({ tenant: 'acme', url: 'http://h/p' }, { tenant: false })).toBe(' --url http://h/p');
  });

  it('quotes a value bash would read otherwise', () => {
    expect(shellWord('http://127.0.0.1:8080/pipeline')).toBe('http://127.0.0.1:8080/pipeline');
    expect(shellWord('/home/me/my token')).toBe("'/home/me/my token'");
    expect(shellWord("it's")).toBe(`'it'\\''s'`);
    expect(shellWord('https://h/p?x=1&y=2')).toBe("'https://h/p?x=1&y=2'");
  });

  it('a curl hint reads the token the way the CLI found it, never printing it', () => {
    expect(tokenWord({}, { tokenFile: '/run/token' })).toBe('$(cat /run/token)');
    expect(tokenWord({ PIPELINE_TOKEN: 'secret' }, {})).toBe('$PIPELINE_TOKEN');
    expect(tokenWord({ PIPELINE_ADMIN_CONFIG: '/nowhere/else.json' }, { token: 'secret' })).not.toContain('secret');
  });
});
