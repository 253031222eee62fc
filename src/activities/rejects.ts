/**
 * The step-level recover-and-continue path: an operator calls `ctx.reject(item, …)` for
 * a bad item and carries on. Only metadata is kept (item key, errorCode, reason, a
 * fingerprint); the item itself never leaves the operator. Rejects are buffered and
 * committed with the step's success, so a retried or redelivered step does not add them
 * twice, and a failed attempt leaves none.
 */
import { createHash } from 'node:crypto';
import type { PendingReject } from '../store/execution-store';

export interface RejectOptions {
  /** a business error code, e.g. INVALID_SKU (upper snake case) */
  errorCode: string;
  /** why, for people; normalised for the fingerprint */
  reason: string;
  /** the item's key; default the item's `id` or `key` field when it has one */
  key?: string;
}

export type { PendingReject };

const CODE = /^[A-Z][A-Z0-9_]{0,63}$/;

/** Stable across runs: the step, the code, and the reason with digits, case and spacing folded. */
export function rejectFingerprint(step: string, errorCode: string, reason: string): string {
  const normalised = reason.toLowerCase().replace(/\d+/g, '#').replace(/\s+/g, ' ').trim();
  return createHash('sha256').update(`${step}\u0000${errorCode}\u0000${normalised}`).digest('hex').slice(0, 16);
}

function keyOf(item: unknown, explicit?: string): string | null {
  if (explicit !== undefined) return String(explicit).slice(0, 256);
  if (item && typeof item === 'object') {
    const candidate = (item as Record<string, unknown>).id ?? (item as Record<string, unknown>).key;
    if (typeof candidate === 'string' || typeof candidate === 'number') return String(candidate).slice(0, 256);
  }
  return null;
}

export class RejectBuffer {
  readonly pending: PendingReject[] = [];

  constructor(
    private readonly step: string,
    private readonly limit = 10_000,
  ) {}

  reject = (item: unknown, options: RejectOptions): void => {
    if (!CODE.test(options.errorCode)) throw new TypeError(`reject: errorCode "${options.errorCode}" must match ${CODE}`);
    if (this.pending.length >= this.limit) throw new RangeError(`reject: more than ${this.limit} rejects in one step attempt`);
    const reason = String(options.reason ?? '').slice(0, 500);
    this.pending.push({
      itemKey: keyOf(item, options.key),
      errorCode: options.errorCode,
      reason,
      fingerprint: rejectFingerprint(this.step, options.errorCode, reason),
    });
  };
}
