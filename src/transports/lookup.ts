/**
 * The disposition lookup, as the contract states it (docs/transition-workers.md, "The
 * disposition lookup"): REST `GET` of the step's dispositionUrl with `{idempotencyKey}`
 * replaced by the URL-encoded key → 200 `{ recorded: boolean, state? }`, or 404 = not
 * recorded; gRPC `Lookup` → `{ recorded, state }`, or NOT_FOUND = not recorded. Anything
 * else, or no answer within the deadline, is no answer: never a guess either way.
 */
import * as grpc from '@grpc/grpc-js';
import { lookupGrpc } from './grpc';

export type LookupTarget = { protocol: 'REST'; urlTemplate: string } | { protocol: 'GRPC'; address: string };

export type LookupAnswer =
  /** `notFound`: "not recorded" said by a 404 / NOT_FOUND, which a wrong lookup URL or method would say too */
  { answered: true; recorded: boolean; state: string | null; notFound?: true } | { answered: false; detail: string };

/** The lookup URL of a tenant-qualified key (`{transitionKey}` is read the same way as `{idempotencyKey}`). */
export function lookupUrl(template: string, key: string): string {
  return template.replace(/\{(idempotencyKey|transitionKey)\}/, encodeURIComponent(key));
}

export async function askLookup(target: LookupTarget, key: string, timeoutMs: number): Promise<LookupAnswer> {
  if (target.protocol === 'GRPC') {
    try {
      const found = await lookupGrpc(target.address, key, timeoutMs);
      return { answered: true, recorded: found.recorded === true, state: found.state || null };
    } catch (err) {
      const code = (err as { code?: number }).code;
      if (code === grpc.status.NOT_FOUND) return { answered: true, recorded: false, state: null, notFound: true };
      return { answered: false, detail: `the worker's Lookup failed (${code === undefined ? 'error' : (grpc.status[code] ?? code)})` };
    }
  }
  try {
    const res = await fetch(lookupUrl(target.urlTemplate, key), { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } });
    // The contract's "no such key": the worker has no record of it.
    if (res.status === 404) return { answered: true, recorded: false, state: null, notFound: true };
    if (!res.ok) return { answered: false, detail: `the worker's lookup answered ${res.status}` };
    const body = (await res.json()) as { recorded?: unknown; state?: unknown } | null;
    if (typeof body?.recorded !== 'boolean') return { answered: false, detail: "the worker's lookup answered without a boolean recorded" };
    return { answered: true, recorded: body.recorded, state: typeof body.state === 'string' ? body.state : null };
  } catch (err) {
    return { answered: false, detail: `the worker's lookup failed (${err instanceof Error ? err.name : 'error'})` };
  }
}
