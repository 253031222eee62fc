/**
 * Maps errors to application/problem+json (RFC 9457) with a stable `code`. Unknown
 * errors become a 500 that says nothing about their content (no stack, no SQL).
 */
import type { Context, ErrorHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { ERROR_CODES, PipelineError, type ErrorCode } from '../errors';
import type { Log } from '../log';

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** Retry-After of a 503: long enough for a restart of Temporal or Postgres to be noticed. */
export const RETRY_AFTER_SECONDS = 5;

/** The problem+json answer for `code`; its HTTP status is the code's own (ERROR_CODES), never the caller's choice. */
export function problem(c: Context, code: ErrorCode, detail: string, extra: Record<string, unknown> = {}, moreHeaders: Record<string, string> = {}) {
  const status = ERROR_CODES[code].status;
  const own = { type: `urn:pipeline:problem:${code.toLowerCase().replace(/_/g, '-')}`, title: TITLES[status] ?? 'Error', status, detail, code };
  // The problem's own members win over any extra of the same name (RFC 9457: `status` is the HTTP status).
  const body = { ...own, ...extra, ...own };
  const headers: Record<string, string> = { ...moreHeaders, 'content-type': 'application/problem+json' };
  if (status === 401) headers['www-authenticate'] = 'Bearer';
  // A 503 is a dependency that is down for now (Temporal, Postgres): say when to try again.
  if (status === 503) headers['retry-after'] = String(RETRY_AFTER_SECONDS);
  return c.body(JSON.stringify(body), status as 400, headers);
}

/** The SQLSTATE of a Postgres error (pg and PGlite both carry it as `code`), else undefined. */
export function sqlStateOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

const HTTP_EXCEPTION_CODES: Partial<Record<number, ErrorCode>> = {
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'ROUTE_NOT_FOUND',
  408: 'REQUEST_TIMEOUT',
  413: 'BODY_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
};

/** The refusals that may leave a request body unread. */
const UNREAD_BODY = new Set<string>(['BODY_TOO_LARGE', 'REQUEST_TIMEOUT', 'UNSUPPORTED_MEDIA_TYPE']);

export function problemHandler(log?: Log): ErrorHandler {
  return (err, c) => {
    // A body refused before it was read to its end: the server closes the connection after the
    // answer (what is left is not drained for ever), so it says so (RFC 9112 §9.6) and a pooled
    // client sends its next request on a new connection instead of losing it on this one.
    if (err instanceof PipelineError) return problem(c, err.code, err.message, err.extra, UNREAD_BODY.has(err.code) ? { connection: 'close' } : {});
    if (err instanceof HTTPException) {
      // Hono's own answers (none of our routes throw these): keep the status where a code says it.
      const code = HTTP_EXCEPTION_CODES[err.status];
      if (code) return problem(c, code, err.message || TITLES[err.status] || 'error');
    }
    // A database error says what kind it was (SQLSTATE), never its SQL text or values.
    const sqlState = sqlStateOf(err);
    log?.error({
      event: 'http_unhandled_error',
      path: c.req.path,
      method: c.req.method,
      error: err instanceof Error ? err.name : 'unknown',
      ...(sqlState ? { sqlState } : {}),
    });
    // Class 22 (data exception): a value Postgres cannot hold slipped past validation; the statement changed nothing.
    if (sqlState?.startsWith('22')) return problem(c, 'UNSTORABLE_VALUE', 'a value in the request cannot be stored; see the service log');
    return problem(c, 'INTERNAL', 'the request could not be completed; see the service log');
  };
}
