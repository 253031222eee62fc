/**
 * Deadlines for Temporal calls made while answering a request
 * (`pipeline.temporal.call-timeout`; a request never waits on Temporal longer): the call
 * carries a gRPC deadline and an abort signal, so neither a paused server nor the client's
 * own retries of an unreachable one can hold a request longer than the timeout.
 */
import type { Client } from '@temporalio/client';

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
