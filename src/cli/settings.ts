/**
 * Where the CLI finds the service and its token. Flags win over environment variables,
 * which win over the config file, which wins over the embedded default's defaults.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { isValidId } from '../ids';
import { CliError } from './exit-codes';

export interface Settings {
  /** the API base, e.g. http://127.0.0.1:8080/pipeline */
  url: string;
  token: string;
  /** absent: only cross-tenant commands (`triage --all-tenants`) can run */
  tenant?: string;
  /** per-request deadline */
  timeoutMs: number;
}

export interface GlobalFlags {
  url?: string;
  token?: string;
  tokenFile?: string;
  tenant?: string;
  config?: string;
  timeout?: string;
}

const ConfigFile = z
  .object({
    url: z.string().url().optional(),
    token: z.string().min(1).optional(),
    tokenFile: z.string().min(1).optional(),
    tenant: z.string().min(1).optional(),
  })
  .strict();

export const DEFAULT_CONFIG_FILE = join(homedir(), '.config', 'pipeline-admin.json');
const DEFAULT_URL = 'http://127.0.0.1:8080/pipeline';
const EMBEDDED_TOKEN_FILE = '.data/admin-token';

function readConfigFile(path: string, explicit: boolean): z.infer<typeof ConfigFile> {
  if (!existsSync(path)) {
    if (explicit) throw new CliError(`--config ${path}: no such file`, 'USAGE');
    return {};
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    throw new CliError(`config file ${path} is not JSON`, 'USAGE');
  }
  const checked = ConfigFile.safeParse(parsed);
  if (!checked.success)
    throw new CliError(
      `config file ${path}: ${checked.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')} (allowed keys: url, token, tokenFile, tenant)`,
      'USAGE',
    );
  return checked.data;
}

function readTokenFile(path: string, source: string): string {
  if (!existsSync(path)) throw new CliError(`${source} ${path}: no such file`, 'USAGE');
  const token = readFileSync(path, 'utf8').trim();
  if (!token) throw new CliError(`${source} ${path} is empty`, 'USAGE');
  return token;
}

export function resolveSettings(flags: GlobalFlags, environment: Record<string, string | undefined> = process.env): Settings {
  // An empty variable is an unset one (`PIPELINE_TOKEN= pipeline-admin …`); an empty PIPELINE_ADMIN_CONFIG reads no config file.
  const env = Object.fromEntries(Object.entries(environment).filter(([name, value]) => value !== '' || name === 'PIPELINE_ADMIN_CONFIG'));
  const file = readConfigFile(flags.config ?? env.PIPELINE_ADMIN_CONFIG ?? DEFAULT_CONFIG_FILE, Boolean(flags.config ?? env.PIPELINE_ADMIN_CONFIG));
  const url = (flags.url ?? env.PIPELINE_URL ?? file.url ?? DEFAULT_URL).replace(/\/+$/, '');
  if (!/^https?:\/\/[^\s/]+/.test(url)) throw new CliError(`--url ${url}: give the API base, e.g. ${DEFAULT_URL}`, 'USAGE');
  let token = flags.token ?? (flags.tokenFile ? readTokenFile(flags.tokenFile, '--token-file') : undefined) ?? env.PIPELINE_TOKEN;
  token ??= file.token ?? (file.tokenFile ? readTokenFile(resolve(file.tokenFile), 'tokenFile') : undefined);
  token ??= existsSync(EMBEDDED_TOKEN_FILE) ? readTokenFile(EMBEDDED_TOKEN_FILE, 'the embedded default') : undefined;
  if (!token)
    throw new CliError(
      `no token: give --token, --token-file, PIPELINE_TOKEN or a config file (the embedded default keeps one in ${EMBEDDED_TOKEN_FILE})`,
      'UNAUTHORIZED',
    );
  const tenant = flags.tenant ?? env.PIPELINE_TENANT ?? file.tenant;
  if (tenant !== undefined && !isValidId(tenant))
    throw new CliError(`--tenant ${tenant}: 1–128 characters of [A-Za-z0-9._-], starting with a letter or digit`, 'USAGE');
  const timeoutMs = flags.timeout === undefined ? 30_000 : Number(flags.timeout) * 1000;
  if (!(timeoutMs >= 1000 && timeoutMs <= 600_000)) throw new CliError(`--timeout ${flags.timeout}: seconds from 1 to 600`, 'USAGE');
  return { url, token, tenant, timeoutMs };
}
