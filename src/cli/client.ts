/**
 * The admin API over HTTP for the CLI: one request function with a deadline, which turns
 * every answer that is not 2xx into a CliError with the exit code a script can rely on.
 */
import { CliError, type ExitName } from './exit-codes';
import type { Settings } from './settings';

function exitFor(status: number): ExitName {
  if (status === 401 || status === 403) return 'UNAUTHORIZED';
  if (status === 404) return 'NOT_FOUND';
  if (status === 409 || status === 422) return 'REFUSED';
  if (status === 503 || status === 504 || status === 408) return 'UNAVAILABLE';
  if (status >= 400 && status < 500) return 'USAGE';
  return 'FAILURE';
}

export class AdminClient {
  constructor(readonly settings: Settings) {}

  /** `path` under the API base, e.g. `/admin/tenants/acme/dlq`. */
  async request<T = any>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    let res: Response;
    try {
      res = await fetch(`${this.settings.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${this.settings.token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        body: body !== undefined ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(this.settings.timeoutMs),
      });
    } catch (err) {
      // fetch says "fetch failed"; its cause says why (ECONNREFUSED, ENOTFOUND, "bad port", …).
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const name = err instanceof Error ? err.name : 'error';
      const why =
        name === 'TimeoutError'
          ? `no answer within ${this.settings.timeoutMs / 1000} s`
          : cause?.code === 'ECONNREFUSED'
            ? 'connection refused'
            : (cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : name));
      throw new CliError(`${this.settings.url}: ${why} (is the service running? --url / PIPELINE_URL)`, 'UNAVAILABLE');
    }
    const text = await res.text();
    let json: any;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      throw new CliError(
        `${method} ${path}: answered ${res.status} with a body that is not JSON (is --url the API base, e.g. http://127.0.0.1:8080/pipeline?)`,
        res.ok ? 'FAILURE' : exitFor(res.status),
      );
    }
    if (!res.ok) {
      const code = typeof json?.code === 'string' ? json.code : undefined;
      const detail = typeof json?.detail === 'string' ? json.detail : res.statusText;
      const issues = Array.isArray(json?.issues) ? ` (${json.issues.map((i: any) => `${i.path || '(body)'}: ${i.message}`).join('; ')})` : '';
      throw new CliError(`${res.status} ${code ?? ''}: ${detail}${issues}`.replace(/ +:/, ':'), exitFor(res.status), code);
    }
    return json as T;
  }

  tenantPath(rest: string): string {
    const { tenant } = this.settings;
    if (!tenant) throw new CliError('no tenant: give --tenant or PIPELINE_TENANT (or "tenant" in the config file)', 'USAGE');
    return `/admin/tenants/${encodeURIComponent(tenant)}${rest}`;
  }
}
