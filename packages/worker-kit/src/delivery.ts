/**
 * One delivery of a transition to a kit worker, whatever the protocol: claim the
 * transition identity, or replay its stored outcome, or answer "in progress" while
 * another delivery of the same identity is running; run the handler once; store what
 * must be replayed (a result, a rejection); forget a retryable failure so the next
 * delivery runs again.
 *
 * The claim carries a fencing token. Its lease is renewed while the handler runs and while
 * its outcome waits to be stored, each renewal conditional on the token. A claim whose lease
 * ran out is *abandoned* (its holder died, or lost its database for longer than the lease):
 * the handler may have made its effect, so by default (`abandonedClaims: 'park'`) no delivery
 * takes it over; they answer "in progress" and log `worker_kit_claim_abandoned`, and the
 * service parks the execution REMOTE_OUTCOME_UNKNOWN for an operator once its in-progress
 * budget runs out. A holder that is still alive keeps renewing and storing: its outcome, once
 * written, is replayed as usual.
 *
 * With `abandonedClaims: 'run-again'` (a handler that passes the key to everything it calls)
 * a later delivery takes an abandoned claim over. Then a lost lease (a renewal finds a later
 * claim, or renewals fail until the lease has run out) aborts the handler's `signal` and
 * logs `worker_kit_lease_lost`; every later write of this delivery is conditional on its
 * token, so a fenced-out delivery's late outcome changes nothing; it is logged
 * (`worker_kit_outcome_fenced`) and counted (`fencedOutWrites`).
 *
 * Once the handler has returned, the claim is marked RAN before its outcome is written, and
 * never released: if the outcome cannot be stored (the kit's Postgres restarting) the kit
 * keeps retrying the write in the background and answers "in progress" meanwhile, and a RAN
 * row survives this process: the next delivery answers "in progress", never runs again.
 */
import type { AbandonedClaims, DedupeStore, StoredResponse } from './dedupe-store.js';
import type { KitLog as Log } from './ports.js';

/**
 * Thrown by a handler for a failure no retry can fix: stored and replayed like a success,
 * answered as a problem (`code`, `detail` = the message, `retryable: false`), which becomes the
 * step's errorCode and errorMessage. The message must not carry payload data.
 */
export class TransitionRejectedError extends Error {
  constructor(
    message: string,
    readonly status = 422,
    /** UPPER_SNAKE, becomes the step's errorCode; without it the step's code is `HTTP_<status>` / `GRPC_FAILED_PRECONDITION` */
    readonly code?: string,
  ) {
    super(message);
    this.name = 'TransitionRejectedError';
  }
}

/**
 * Thrown by a handler for a failure a retry may fix, with its own error code: nothing is
 * stored (the next delivery runs the handler again), answered as a retryable problem
 * (REST 503, gRPC UNAVAILABLE) whose `code` becomes the step's errorCode and whose `detail`
 * is the message. The message must not carry payload data. Any other throw is answered the
 * same way without a code or the message ("transition failed; retry").
 */
export class TransitionRetryableError extends Error {
  constructor(
    message: string,
    /** UPPER_SNAKE, becomes the step's errorCode */
    readonly code?: string,
  ) {
    super(message);
    this.name = 'TransitionRetryableError';
  }
}

/** The reason a handler's `signal` is aborted with when its claim's lease is lost. */
export class LeaseLostError extends Error {
  constructor(
    readonly key: string,
    readonly fence: number,
    readonly cause: 'FENCED' | 'EXPIRED',
  ) {
    super(
      cause === 'FENCED'
        ? `the claim on ${key} (fence ${fence}) was taken over by a later delivery`
        : `the claim on ${key} (fence ${fence}) could not be renewed before its lease ran out`,
    );
    this.name = 'LeaseLostError';
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
  /** the handler failed retryably; nothing was stored, the claim is released. `problem` when it threw TransitionRetryableError */
  | { kind: 'retry'; problem?: { code?: string; detail: string } };

export interface DeliveryLimits {
  /** how long a claim holds without renewal before another delivery may take it over (this process died) */
  leaseMs: number;
  /** how long a delivery waits for a concurrent copy's outcome before answering "in progress" */
  waitMs: number;
  /** an abandoned claim (lease run out) is left alone and answered "in progress" ('park', the default), or taken over and run again */
  abandonedClaims?: AbandonedClaims;
}

/** Asked of the caller before it delivers the same identity again. */
const IN_PROGRESS_RETRY_MS = 1000;
const WRITE_BACKOFF_MS = { first: 100, max: 2000 };

/** Renews one claim's lease, conditional on its token, until stopped or lost. */
class Lease {
  private readonly timer: NodeJS.Timeout;
  /** local time until which the lease surely holds (last successful renewal's send time + lease) */
  private validUntil: number;
  lost = false;

  /** the lease ran out at least once (reported once) */
  private expired = false;
  /**
   * The outcome is being written: those writes are conditional on the token and report a later
   * claim themselves, so a renewal that finds the row completed (by this very delivery, racing
   * the renewal) is not a lost lease.
   */
  private writing = false;

  constructor(
    private readonly store: DedupeStore,
    private readonly key: string,
    private readonly fence: number,
    private readonly leaseMs: number,
    private readonly onLost: (cause: 'FENCED' | 'EXPIRED') => void,
    claimedAt: number,
    /**
     * Whether another delivery may take this claim over once its lease ran out. When none may
     * ('park'), an expired lease is not lost: it is reported once and renewals go on, so the
     * handler is not aborted and its outcome is still stored when the database is back.
     */
    private readonly takeoverPossible: boolean,
    private readonly onExpired: () => void,
  ) {
    this.validUntil = claimedAt + leaseMs;
    this.timer = setInterval(() => void this.renew(), Math.max(50, Math.floor(leaseMs / 3)));
  }

  private async renew(): Promise<void> {
    if (this.lost) return;
    const sentAt = Date.now();
    try {
      const held = await this.store.renew(this.key, this.fence, this.leaseMs);
      if (this.lost) return;
      if (held) this.validUntil = sentAt + this.leaseMs;
      else if (!this.writing) this.lose('FENCED');
    } catch {
      // The store cannot say; once the lease has run out, another delivery may claim the identity (if takeovers are on).
      if (this.lost || Date.now() < this.validUntil) return;
      if (this.takeoverPossible) this.lose('EXPIRED');
      else if (!this.expired) {
        this.expired = true;
        this.onExpired();
      }
    }
  }

  private lose(cause: 'FENCED' | 'EXPIRED'): void {
    this.lost = true;
    this.stop();
    this.onLost(cause);
  }

  /** From here on the outcome writes, not the renewals, tell whether a later claim took over. */
  writingOutcome(): void {
    this.writing = true;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

export class Deliveries {
  /** Outcomes whose handler ran but which are not stored yet, by key: redeliveries here answer "in progress". */
  private readonly unstored = new Map<string, StoredResponse>();
  private fenced = 0;

  constructor(
    private readonly store: DedupeStore,
    private readonly limits: DeliveryLimits,
    private readonly log?: Log,
  ) {}

  private get abandonedClaims(): AbandonedClaims {
    return this.limits.abandonedClaims ?? 'park';
  }

  async deliver(key: string, run: (signal: AbortSignal) => Promise<unknown>): Promise<DeliveryOutcome> {
    const inProgress = { kind: 'in-progress', retryAfterMs: IN_PROGRESS_RETRY_MS } as const;
    if (this.unstored.has(key)) return inProgress;
    const deadline = Date.now() + this.limits.waitMs;
    let fence: number;
    let claimedAt: number;
    try {
      for (;;) {
        claimedAt = Date.now();
        const claim = await this.store.claim(key, this.limits.leaseMs, this.abandonedClaims);
        if (claim.claimed) {
          fence = claim.fence;
          break;
        }
        if (claim.state === 'DONE' && claim.response) return { kind: 'done', stored: claim.response, replayed: true };
        if (claim.abandoned) {
          // Its holder died (or lost the database) with the handler started: it may have made its effect. Never run it again.
          this.log?.warn({
            event: 'worker_kit_claim_abandoned',
            idempotencyKey: key,
            detail: 'the claim on this identity was abandoned (lease ran out) after its handler started; not run again, answered in progress',
          });
          return inProgress;
        }
        if (Date.now() > deadline || this.unstored.has(key)) return inProgress;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } catch {
      // The store cannot say whether this identity ran: never guess "not yet".
      return inProgress;
    }

    const controller = new AbortController();
    const lease = new Lease(
      this.store,
      key,
      fence,
      this.limits.leaseMs,
      (cause) => {
        const reason = new LeaseLostError(key, fence, cause);
        this.log?.warn({ event: 'worker_kit_lease_lost', idempotencyKey: key, fence, cause, detail: reason.message });
        controller.abort(reason);
      },
      claimedAt!,
      this.abandonedClaims === 'run-again',
      () =>
        this.log?.warn({
          event: 'worker_kit_lease_expired',
          idempotencyKey: key,
          fence,
          detail: 'the claim could not be renewed before its lease ran out; no other delivery takes it over (abandoned claims park), renewals go on',
        }),
    );
    let stored: StoredResponse;
    try {
      stored = { status: 200, body: (await run(controller.signal)) ?? null };
    } catch (err) {
      if (err instanceof TransitionRejectedError) {
        stored = { status: err.status, body: { error: err.message, ...(err.code ? { code: err.code } : {}) } };
      } else {
        lease.stop();
        // The handler says a retry is safe: forget the claim, if still ours (if that fails too, the lease runs out).
        await this.store.release(key, fence).catch(() => undefined);
        return err instanceof TransitionRetryableError ? { kind: 'retry', problem: { code: err.code, detail: err.message } } : { kind: 'retry' };
      }
    }
    // The handler has run: from here on the claim is never released.
    lease.writingOutcome();
    try {
      if (!(await this.store.markRan(key, fence)) || !(await this.store.complete(key, fence, stored))) {
        lease.stop();
        return this.fencedOut(key, fence);
      }
      lease.stop();
      return { kind: 'done', stored, replayed: false };
    } catch {
      this.unstored.set(key, stored);
      void this.storeLater(key, fence, stored).finally(() => lease.stop());
      return inProgress;
    }
  }

  /** A later claim holds the identity: this delivery's outcome was not written. */
  private fencedOut(key: string, fence: number): DeliveryOutcome {
    this.fenced++;
    this.log?.warn({
      event: 'worker_kit_outcome_fenced',
      idempotencyKey: key,
      fence,
      detail: 'a later delivery claimed this identity; this delivery’s outcome was not written',
    });
    return { kind: 'in-progress', retryAfterMs: IN_PROGRESS_RETRY_MS };
  }

  /** Retries RAN and the outcome write until stored (or fenced out); redeliveries meanwhile answer "in progress". */
  private async storeLater(key: string, fence: number, stored: StoredResponse): Promise<void> {
    for (let wait = WRITE_BACKOFF_MS.first; ; wait = Math.min(WRITE_BACKOFF_MS.max, wait * 2)) {
      await new Promise((resolve) => setTimeout(resolve, wait));
      try {
        if (!(await this.store.markRan(key, fence)) || !(await this.store.complete(key, fence, stored))) throw new FencedOut();
        this.unstored.delete(key);
        return;
      } catch (err) {
        if (err instanceof FencedOut) {
          this.unstored.delete(key);
          this.fencedOut(key, fence);
          return;
        }
        // still down; try again
      }
    }
  }

  /** Outcomes still waiting to be stored (a graceful stop should wait for 0). */
  get pendingWrites(): number {
    return this.unstored.size;
  }

  /** Late writes of fenced-out deliveries that changed nothing, since this process started. */
  get fencedOutWrites(): number {
    return this.fenced;
  }
}

class FencedOut extends Error {}
