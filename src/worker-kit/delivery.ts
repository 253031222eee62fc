/**
 * One delivery of a transition to a kit worker, whatever the protocol: claim the
 * transition identity, or replay its stored outcome, or wait for a concurrent copy to
 * finish; run the handler once; store what must be replayed (a result, a rejection);
 * forget a retryable failure so the next delivery runs again.
 */
import type { DedupeStore, StoredResponse } from './dedupe-store';

/** Thrown by a handler for a failure no retry can fix: stored and replayed like a success. */
export class TransitionRejected extends Error {
  constructor(
    message: string,
    readonly status = 422,
  ) {
    super(message);
    this.name = 'TransitionRejected';
  }
}

export type DeliveryOutcome =
  | { kind: 'done'; stored: StoredResponse; replayed: boolean }
  /** a concurrent delivery of the same identity is still running past the wait */
  | { kind: 'busy' }
  /** the handler failed retryably; nothing was stored */
  | { kind: 'retry' };

export async function deliver(store: DedupeStore, key: string, limits: { leaseMs: number; waitMs: number }, run: () => Promise<unknown>): Promise<DeliveryOutcome> {
  const deadline = Date.now() + limits.waitMs;
  for (;;) {
    const claim = await store.claim(key, limits.leaseMs);
    if (claim.claimed) break;
    if (claim.state === 'DONE' && claim.response) return { kind: 'done', stored: claim.response, replayed: true };
    if (Date.now() > deadline) return { kind: 'busy' };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  try {
    const stored = { status: 200, body: (await run()) ?? null };
    await store.complete(key, stored);
    return { kind: 'done', stored, replayed: false };
  } catch (err) {
    if (err instanceof TransitionRejected) {
      const stored = { status: err.status, body: { error: err.message } };
      await store.complete(key, stored);
      return { kind: 'done', stored, replayed: false };
    }
    await store.release(key);
    return { kind: 'retry' };
  }
}
