/**
 * A path that exists under another method answers 405 `METHOD_NOT_ALLOWED` with `Allow`
 * (RFC 9110), not 404: the caller has the right address and the wrong verb.
 */
import type { Hono } from 'hono';

/** A Hono route path (`/a/:id/b`, `*`) as an anchored RegExp. */
function pathPattern(path: string): RegExp {
  const source = path
    .split('/')
    .map((part) => (part === '*' ? '.*' : part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${source}/?$`);
}

/** The methods `app` has a handler for at `path` (middleware, method ALL, excluded), HEAD with GET; empty when none. */
export function allowedMethods(app: Hono<any>, path: string): string[] {
  const methods = new Set<string>();
  for (const route of app.routes) {
    if (route.method === 'ALL' || !pathPattern(route.path).test(path)) continue;
    methods.add(route.method);
    if (route.method === 'GET') methods.add('HEAD');
  }
  return [...methods].sort();
}
