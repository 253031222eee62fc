/**
 * The admin API over HTTP for the CLI: one request function with a deadline, which turns
 * every answer that is not 2xx into a CliError with the exit code a script can rely on.
 */
import type { z } from 'zod';
import type { ProblemSchema } from '../contract/responses';
import { CliError, type ExitName } from './exit-codes';
import type { Settings } from './settings';

/**
 * The body a route answers, typed from the contract's response schema (`Answer<typeof
 * RedriveJobViewSchema>`): the same zod schema the OpenAPI document is generated from.
 * Type-only, so the CLI loads no zod at run time.
 */
export type Answer<S extends z.ZodType> = z.output<S>;

/** The parts of a problem+json body the CLI reports. */
type ProblemFields = Partial<Pick<Answer<typeof ProblemSchema>, 'code' | 'detail' | 'issues'>>;

/** A non-2xx body read as a problem, keeping only members of the expected types. */
function problemOf(body: unknown): ProblemFields {
  if (typeof body !== 'object' || body === null) return {};
  const { code, detail, issues } = body as Record<string, unknown>;
  return {
    ...(typeof code === 'string' ? { code: code as ProblemFields['code'] } : {}),
    ...(typeof detail === 'string' ? { detail } : {}),
    ...(Array.isArray(issues)
      ? { issues: issues.filter((i): i is { path: string; code: string; message: string } => typeof i === 'object' && i !== null) }
      : {}),
  };
}

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

  /**
   * `path` under the API base, e.g. `/admin/tenants/acme/dlq`; `options.timeoutMs`: this call's own deadline instead of --timeout.
   * `T`: the route's 2xx body, as `Answer<typeof Schema>` of the contract's response schema (unknown when not given).
   */
  async request<T = unknown>(method: 'GET' | 'POST', path: string, body?: unknown, options: { timeoutMs?: number } = {}): Promise<T> {
    const timeoutMs = options.timeoutMs ?? this.settings.timeoutMs;
    let res: Response;
    try {
      res = await fetch(`${this.settings.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${this.settings.token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        body: body !== undefined ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      // fetch says "fetch failed"; its cause says why (ECONNREFUSED, ENOTFOUND, "bad port", …).
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const name = err instanceof Error ? err.name : 'error';
      const why =
        name === 'TimeoutError'
          ? `no answer within ${timeoutMs / 1000} s`
          : cause?.code === 'ECONNREFUSED'
            ? 'connection refused'
            : (cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : name));
      throw new CliError(`${this.settings.url}: ${why} (is the service running? --url / PIPELINE_URL)`, 'UNAVAILABLE');
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      throw new CliError(
        `${method} ${path}: answered ${res.status} with a body that is not JSON (is --url the API base, e.g. http://127.0.0.1:8080/pipeline?)`,
        res.ok ? 'FAILURE' : exitFor(res.status),
      );
    }
    if (!res.ok) {
      const problem = problemOf(json);
      const code = problem.code;
      const detail = problem.detail ?? res.statusText;
      const issues = problem.issues ? ` (${problem.issues.map((i) => `${i.path || '(body)'}: ${i.message}`).join('; ')})` : '';
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
