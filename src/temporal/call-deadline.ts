/**
 * Deadlines for Temporal calls made while answering a request
 * (`pipeline.temporal.call-timeout`; a request never waits on Temporal longer): the call
 * carries a gRPC deadline and an abort signal, so neither a paused server nor the client's
 * own retries of an unreachable one can hold a request longer than the timeout.
 */
import { setMaxListeners } from 'node:events';
import type { Client } from '@temporalio/client';

/**
 * Listeners one deadline's signal may carry. The SDK adds one per gRPC call made under the
 * signal and never removes it, and one deadline can span many calls: a start that waits
 * for a closing previous run makes up to 14 (a start and a describe per wait). Node's
 * default of 10 would print MaxListenersExceededWarning, which reads as a leak; the signal
 * lives only as long as its deadline, so its listeners go with it.
 */
const CALLS_PER_DEADLINE = 64;

/** A Temporal call that ran out of its deadline (or was cancelled by it). */
export class TemporalCallTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`Temporal did not answer within ${timeoutMs} ms (pipeline.temporal.call-timeout)`);
    this.name = 'TemporalCallTimeoutError';
  }
}

/**
 * Runs `fn` (Temporal calls through `client`) with a deadline of `timeoutMs`. Rejects with
 * TemporalCallTimeoutError when the deadline passes, whatever the SDK is doing by then
 * (a call in flight is cancelled; a retry backoff is abandoned).
 */
export async function withCallDeadline<T>(client: Client, timeoutMs: number, fn: () => Promise<T>): Promise<T> {
  const abort = new AbortController();
  setMaxListeners(CALLS_PER_DEADLINE, abort.signal);
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      abort.abort();
      reject(new TemporalCallTimeoutError(timeoutMs));
    }, timeoutMs);
  });
  const call = client.connection.withDeadline(Date.now() + timeoutMs, () => client.connection.withAbortSignal(abort.signal, fn));
  call.catch(() => undefined); // its rejection after the deadline is already answered by `expired`
  try {
    return await Promise.race([call, expired]);
  } finally {
    clearTimeout(timer);
  }
}
