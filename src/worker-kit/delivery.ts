/**
 * One delivery of a transition to a kit worker, whatever the protocol: claim the
 * transition identity, or replay its stored outcome, or answer "in progress" while
 * another delivery of the same identity is running; run the handler once; store what
 * must be replayed (a result, a rejection); forget a retryable failure so the next
 * delivery runs again.
 *
 * Once the handler has run, its claim is never released: if the outcome cannot be stored
 * (the kit's Postgres restarting), the kit keeps retrying the write in the background and
 * answers "in progress" meanwhile, so every redelivery waits for the stored outcome instead
 * of running the handler again. The claim's lease is renewed while the handler runs and
 * while its outcome waits to be stored; it expires only when this process died.
 */
import type { DedupeStore, StoredResponse } from './dedupe-store';

/** Thrown by a handler for a failure no retry can fix: stored and replayed like a success. */
export class TransitionRejectedError extends Error {
  constructor(
    message: string,
    readonly status = 422,
  ) {
    super(message);
    this.name = 'TransitionRejectedError';
  }
}

export type DeliveryOutcome =
  | { kind: 'done'; stored: StoredResponse; replayed: boolean }
  /**
   * Not a failed attempt: the same identity is being handled (another delivery, or its
   * outcome is still being stored), or the kit's store cannot say. Deliver the same
   * identity again after `retryAfterMs`.
   */
  | { kind: 'in-progress'; retryAfterMs: number }
  /** the handler failed retryably; nothing was stored, the claim is released */
  | { kind: 'retry' };

export interface DeliveryLimits {
  /** how long a claim holds without renewal before another delivery may take it over (this process died) */
  leaseMs: number;
  /** how long a delivery waits for a concurrent copy's outcome before answering "in progress" */
  waitMs: number;
}

/** Asked of the caller before it delivers the same identity again. */
const IN_PROGRESS_RETRY_MS = 1000;
const WRITE_BACKOFF_MS = { first: 100, max: 2000 };

export class Deliveries {
  /** Outcomes whose handler ran but which are not stored yet, by key: redeliveries here answer "in progress". */
  private readonly unstored = new Map<string, StoredResponse>();

  constructor(
    private readonly store: DedupeStore,
    private readonly limits: DeliveryLimits,
  ) {}

  async deliver(key: string, run: () => Promise<unknown>): Promise<DeliveryOutcome> {
    const inProgress = { kind: 'in-progress', retryAfterMs: IN_PROGRESS_RETRY_MS } as const;
    if (this.unstored.has(key)) return inProgress;
    const deadline = Date.now() + this.limits.waitMs;
    try {
      for (;;) {
        const claim = await this.store.claim(key, this.limits.leaseMs);
        if (claim.claimed) break;
        if (claim.state === 'DONE' && claim.response) return { kind: 'done', stored: claim.response, replayed: true };
        if (Date.now() > deadline || this.unstored.has(key)) return inProgress;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } catch {
      // The store cannot say whether this identity ran: never guess "not yet".
      return inProgress;
    }

    const renewal = setInterval(
      () => void this.store.renew(key, this.limits.leaseMs).catch(() => undefined),
      Math.max(50, Math.floor(this.limits.leaseMs / 3)),
    );
    let stored: StoredResponse;
    try {
      stored = { status: 200, body: (await run()) ?? null };
    } catch (err) {
      if (err instanceof TransitionRejectedError) {
        stored = { status: err.status, body: { error: err.message } };
      } else {
        clearInterval(renewal);
        // The handler says a retry is safe: forget the claim (if that fails too, the lease runs out).
        await this.store.release(key).catch(() => undefined);
        return { kind: 'retry' };
      }
    }
    // The handler has run: from here on the claim is never released.
    try {
      await this.store.complete(key, stored);
      clearInterval(renewal);
      return { kind: 'done', stored, replayed: false };
    } catch {
      this.unstored.set(key, stored);
      void this.storeLater(key, stored).finally(() => clearInterval(renewal));
      return inProgress;
    }
  }

  /** Retries the outcome write until it is stored; redeliveries meanwhile answer "in progress". */
  private async storeLater(key: string, stored: StoredResponse): Promise<void> {
    for (let wait = WRITE_BACKOFF_MS.first; ; wait = Math.min(WRITE_BACKOFF_MS.max, wait * 2)) {
      await new Promise((resolve) => setTimeout(resolve, wait));
      try {
        await this.store.complete(key, stored);
        this.unstored.delete(key);
        return;
      } catch {
        // still down; try again
      }
    }
  }

  /** Outcomes still waiting to be stored (a graceful stop should wait for 0). */
  get pendingWrites(): number {
    return this.unstored.size;
  }
}
