/**
 * Bearer authentication against configured token hashes. Every configured token is
 * compared, in constant time over SHA-256 digests, with no early exit on a match, so
 * response time says nothing about which token (if any) matched. Sets `principal`.
 */
import { sha256Hex } from '../../hash';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import type { TokenConfig, TokenRole } from '../../config/config';
import { ForbiddenError, UnauthorizedError } from '../../errors';
import type { Log } from '../../log';
import { mayRepair, type Principal } from '../../repair/principal';

export { mayRepair, type Principal };

/** The admin routes a repair token may use besides reading: a re-drive or a fork of one execution. */
const REPAIR_WRITE = /\/executions\/[^/]+\/(redrive|fork)$/;

/** Whether a token of `role` may use the admin route `method path`. */
function adminAllows(role: TokenRole, method: string, path: string): boolean {
  if (role === 'admin') return true;
  if (role !== 'repair') return false;
  return method === 'GET' || method === 'HEAD' || (method === 'POST' && REPAIR_WRITE.test(path));
}

export type AuthEnv = { Variables: { principal: Principal } };

export { sha256Hex };

export function bearerAuth(options: { tokens: TokenConfig[]; role: 'admin' | 'submit'; log?: Log }): MiddlewareHandler<AuthEnv> {
  if (!Array.isArray(options.tokens)) throw new TypeError('bearerAuth: tokens must be an array');
  const entries = options.tokens.map((token, index) => {
    // Checked here, once: a digest of the wrong length would make timingSafeEqual throw on every request.
    if (typeof token.sha256 !== 'string' || !/^[0-9a-f]{64}$/i.test(token.sha256)) {
      throw new TypeError(`bearerAuth: token ${token.name ?? index} has no valid sha256 (64 hex characters expected)`);
    }
    return { digest: Buffer.from(token.sha256.toLowerCase(), 'hex'), token, index };
  });
  return async function bearerAuthMiddleware(c, next) {
    const header = c.req.header('authorization') ?? '';
    // RFC 7235: the scheme is case-insensitive and followed by one or more spaces.
    const match = /^bearer +([\x21-\x7e]{1,512})$/i.exec(header);
    if (!match) {
      options.log?.info({ event: 'admin_auth_failed', reason: header ? 'malformed' : 'missing', path: c.req.path });
      throw new UnauthorizedError();
    }
    const presented = createHash('sha256').update(match[1], 'utf8').digest();
    let found: (typeof entries)[number] | undefined;
    for (const entry of entries) {
      // No break: the loop costs the same whichever entry matches.
      if (timingSafeEqual(entry.digest, presented) && !found) found = entry;
    }
    if (!found) {
      options.log?.info({ event: 'admin_auth_failed', reason: 'unknown_token', path: c.req.path });
      throw new UnauthorizedError();
    }
    const principal: Principal = {
      name: found.token.name ?? `token-${found.index}`,
      role: found.token.role,
      tenants: found.token.tenants,
      readPayloads: found.token.readPayloads === true,
    };
    if (options.role === 'admin' && !adminAllows(principal.role, c.req.method, c.req.path)) {
      throw new ForbiddenError(
        principal.role === 'repair'
          ? 'a repair token may read the admin API and re-drive or fork an execution, nothing else'
          : 'this token may not use the admin API',
      );
    }
    // A repair token corrects what failed; it neither submits work nor reads results.
    if (options.role === 'submit' && principal.role === 'repair' && /\/api\//.test(c.req.path))
      throw new ForbiddenError('a repair token may not use the submit API');
    const tenantId = c.req.param('tenantId');
    if (tenantId !== undefined && principal.tenants && !principal.tenants.includes(tenantId)) {
      throw new ForbiddenError(`this token may not act on tenant ${tenantId}`);
    }
    c.set('principal', principal);
    await next();
  };
}
