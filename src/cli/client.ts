/**
 * The admin API over HTTP for the CLI: `call(key, input)` of a route declared in
 * src/api/routes.ts (its key, parameters, query, body and answer type-checked against the
 * declaration; a type-only import, so no declaration or contract schema is in the CLI at run time), with a deadline, turning every
 * answer that is not 2xx into a CliError with the exit code a script can rely on.
 */
import type { z } from 'zod';
import type { ProblemSchema } from '../contract/responses';
import type { RouteKey, Routes } from '../api/routes';
import { CliError, type ExitName } from './exit-codes';
import type { Settings } from './settings';

/**
 * The body a route answers, typed from the contract's response schema (`Answer<typeof
 * RedriveJobViewSchema>`): the same zod schema the OpenAPI document is generated from.
 * Type-only: no contract schema is loaded at run time.
 */
export type Answer<S extends z.ZodType> = z.output<S>;

type Schema<T> = T extends z.ZodType ? T : never;
type Operation<K extends RouteKey> = Routes[K];
type Responses<K extends RouteKey> = Operation<K>['responses'];

/** The 2xx statuses route K answers with a JSON body. */
export type OkStatus<K extends RouteKey> = {
  [S in keyof Responses<K>]: S extends `2${string}`
    ? Responses<K>[S] extends { content: { 'application/json': unknown } }
      ? S extends `${infer N extends number}`
        ? N
        : never
      : never
    : never;
}[keyof Responses<K>];

/** The body route K answers with status S, as its declaration's schema types it. */
export type OkBody<K extends RouteKey, S extends number = OkStatus<K>> = S extends unknown
  ? Responses<K>[`${S}` & keyof Responses<K>] extends { content: { 'application/json': { schema: infer B } } }
    ? z.output<Schema<B>>
    : never
  : never;

/**
 * What a call of route K sends, typed by its declaration: its path parameters, its query (the
 * declared names; values are text, as on the wire, checked by the service) and its body.
 */
export type CallInput<K extends RouteKey> = (Operation<K> extends { requestParams: { path: infer P } } ? { params: z.input<Schema<P>> } : { params?: never }) &
  (Operation<K> extends { requestParams: { query: infer Q } } ? { query?: { [N in keyof z.input<Schema<Q>>]?: string } } : { query?: never }) &
  (Operation<K> extends { requestBody: { required: true; content: { 'application/json': { schema: infer B } } } }
    ? { body: z.input<Schema<B>> }
    : Operation<K> extends { requestBody: { content: { 'application/json': { schema: infer B } } } }
      ? { body?: z.input<Schema<B>> }
      : { body?: never });

/** The path of a route key with its parameters filled in (each encoded), and its query string. */
export function pathOf(key: RouteKey, params: Record<string, string> = {}, query: Record<string, unknown> = {}): { method: 'GET' | 'POST'; path: string } {
  const [method, template] = key.split(' ') as ['GET' | 'POST', string];
  const path = template.replace(/\{([A-Za-z]+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`${key}: no value for {${name}}`);
    return encodeURIComponent(value);
  });
  const search = new URLSearchParams(
    Object.entries(query).flatMap(([name, value]) => (value === undefined || value === '' ? [] : [[name, String(value)] as [string, string]])),
  );
  return { method, path: search.size ? `${path}?${search}` : path };
}

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
   * Calls the declared route `key` (src/api/routes.ts) with its parameters, query and body, each
   * type-checked against the declaration; answers the route's 2xx body as its schema types it.
   * `options.expect`: the 2xx status this call expects when the route has more than one (e.g. 200
   * for a dry run); another 2xx is then a FAILURE, and the answer's type is that status's.
   */
  async call<K extends RouteKey, const S extends OkStatus<K>>(key: K, input: CallInput<K>, options: { timeoutMs?: number; expect: S }): Promise<OkBody<K, S>>;
  async call<K extends RouteKey>(key: K, input: CallInput<K>, options?: { timeoutMs?: number }): Promise<OkBody<K>>;
  async call(key: RouteKey, input: object, options: { timeoutMs?: number; expect?: number } = {}): Promise<unknown> {
    const { params, query, body } = input as { params?: Record<string, string>; query?: Record<string, unknown>; body?: unknown };
    const { method, path } = pathOf(key, params, query);
    const { status, json } = await this.send(method, path, body, options);
    if (options.expect !== undefined && status !== options.expect)
      throw new CliError(`${method} ${path}: answered ${status} where ${options.expect} was expected`, 'FAILURE');
    return json;
  }

  /** The tenant of this invocation (--tenant, PIPELINE_TENANT or the config file's), or a USAGE error. */
  get tenant(): string {
    const { tenant } = this.settings;
    if (!tenant) throw new CliError('no tenant: give --tenant or PIPELINE_TENANT (or "tenant" in the config file)', 'USAGE');
    return tenant;
  }

  /** `path` under the API base, e.g. `/admin/tenants/acme/dlq`; `options.timeoutMs`: this call's own deadline instead of --timeout. */
  private async send(method: 'GET' | 'POST', path: string, body: unknown, options: { timeoutMs?: number }): Promise<{ status: number; json: unknown }> {
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
    return { status: res.status, json };
  }
}
