/**
 * Where the CLI finds the service, its token and tenant: flags over environment variables
 * over the config file over the defaults, each refusal a usage error naming what to fix.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CliError } from '../../src/cli/exit-codes';
import { resolveSettings } from '../../src/cli/settings';

const dir = mkdtempSync(join(tmpdir(), 'pipeline-admin-'));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const config = file('config.json', JSON.stringify({ url: 'http://config:1/pipeline', token: 'config-token', tenant: 'config-tenant' }));
const noFile = { PIPELINE_ADMIN_CONFIG: '' };

function refusal(run: () => unknown): { exit: string; message: string } {
  try {
    run();
  } catch (err) {
    if (err instanceof CliError) return { exit: err.exit, message: err.message };
    throw err;
  }
  throw new Error('no refusal');
}

describe('pipeline-admin settings', () => {
  it('takes flags over environment variables over the config file', () => {
    expect(resolveSettings({ config }, {})).toMatchObject({ url: 'http://config:1/pipeline', token: 'config-token', tenant: 'config-tenant' });
    const env = { PIPELINE_URL: 'http://env:2/pipeline/', PIPELINE_TOKEN: 'env-token', PIPELINE_TENANT: 'env-tenant' };
    expect(resolveSettings({ config }, env)).toMatchObject({ url: 'http://env:2/pipeline', token: 'env-token', tenant: 'env-tenant' });
    expect(resolveSettings({ config, url: 'http://flag:3/p', token: 'flag-token', tenant: 'flag-tenant' }, env)).toMatchObject({
      url: 'http://flag:3/p',
      token: 'flag-token',
      tenant: 'flag-tenant',
    });
    // The config file named by the environment, and an empty variable counts as unset.
    expect(resolveSettings({}, { PIPELINE_ADMIN_CONFIG: config, PIPELINE_TOKEN: '' })).toMatchObject({ token: 'config-token', tenant: 'config-tenant' });
  });

  it('reads the token from --token-file before PIPELINE_TOKEN, and from the config file tokenFile', () => {
    const tokenFile = file('token', 'file-token\n');
    expect(resolveSettings({ tokenFile }, { ...noFile, PIPELINE_TOKEN: 'env-token' }).token).toBe('file-token');
    expect(resolveSettings({ token: 'flag-token', tokenFile }, noFile).token).toBe('flag-token');
    const viaConfig = file('config-token-file.json', JSON.stringify({ tokenFile }));
    expect(resolveSettings({ config: viaConfig }, {}).token).toBe('file-token');
  });

  it('defaults to the embedded service and leaves the tenant unset', () => {
    const settings = resolveSettings({ token: 't' }, noFile);
    expect(settings).toMatchObject({ url: 'http://127.0.0.1:8080/pipeline', timeoutMs: 30_000 });
    expect(settings.tenant).toBeUndefined();
  });

  it('refuses what it cannot use, naming it', () => {
    expect(refusal(() => resolveSettings({ config: join(dir, 'nope.json') }, {}))).toEqual({
      exit: 'USAGE',
      message: expect.stringContaining('nope.json: no such file'),
    });
    expect(refusal(() => resolveSettings({ config: file('bad.json', '{') }, {}))).toMatchObject({
      exit: 'USAGE',
      message: expect.stringContaining('is not JSON'),
    });
    expect(refusal(() => resolveSettings({ config: file('extra.json', '{"uri":"x"}') }, {}))).toMatchObject({
      exit: 'USAGE',
      message: expect.stringContaining('allowed keys: url, token, tokenFile, tenant'),
    });
    expect(refusal(() => resolveSettings({ token: 't', url: 'localhost:8080' }, noFile))).toMatchObject({
      exit: 'USAGE',
      message: expect.stringContaining('--url'),
    });
    expect(refusal(() => resolveSettings({ token: 't', tenant: 'a b' }, noFile))).toMatchObject({
      exit: 'USAGE',
      message: expect.stringContaining('--tenant'),
    });
    expect(refusal(() => resolveSettings({ token: 't', timeout: '0' }, noFile))).toMatchObject({
      exit: 'USAGE',
      message: expect.stringContaining('--timeout'),
    });
    expect(refusal(() => resolveSettings({ tokenFile: join(dir, 'missing') }, noFile))).toMatchObject({
      exit: 'USAGE',
      message: expect.stringContaining('--token-file'),
    });
  });
});
