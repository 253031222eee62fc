/**
 * Start-up against a Temporal that is not up yet (docker-compose's first start: the
 * auto-setup image needs its schema before it answers): keep trying to connect, with capped
 * exponential backoff and jitter, until the namespace answers or `pipeline.temporal.connect-wait`
 * has passed. Meanwhile the service answers /readyz with 503 naming what it waits for.
 * A setting that is wrong (a TLS file, a certificate) is not waited on: a ConfigError ends
 * the wait at once.
 */
import type { Connection } from '@temporalio/client';
import { ConfigError, errorMessage } from '../errors';
import type { Log } from '../log';
import { retryDelayMs } from '../retry';

export interface ConnectWait {
  address: string;
  namespace: string;
  /** how long to keep trying, ms (`pipeline.temporal.connect-wait`) */
  waitMs: number;
  connect(): Promise<Connection>;
  log: Log;
  /** told before each wait: what is awaited and why the last try failed */
  onWaiting?(state: { attempt: number; error: string; nextInMs: number }): void;
  /** test seam */
  sleep?(ms: number): Promise<void>;
}

const BACKOFF = { waitMs: 500, maxBackoffMs: 15_000, jitter: true };

/** The namespace answers: the server is past its schema set-up and the namespace exists. */
async function namespaceAnswers(connection: Connection, namespace: string): Promise<void> {
  await connection.workflowService.describeNamespace({ namespace });
}

export async function connectWaiting(options: ConnectWait): Promise<Connection> {
  const sleep = options.sleep ?? ((ms: number) => new Promise((resolve) => setTimeout(resolve, ms)));
  const deadline = Date.now() + options.waitMs;
  for (let attempt = 1; ; attempt++) {
    let connection: Connection | undefined;
    try {
      connection = await options.connect();
      await namespaceAnswers(connection, options.namespace);
      if (attempt > 1) options.log.info({ event: 'temporal_connected', address: options.address, attempts: attempt });
      return connection;
    } catch (err) {
      await connection?.close().catch(() => undefined);
      if (err instanceof ConfigError) throw err;
      const error = errorMessage(err).split('\n')[0].slice(0, 200);
      const nextInMs = Math.min(retryDelayMs(BACKOFF, attempt), Math.max(0, deadline - Date.now()));
      if (nextInMs <= 0) {
        throw new Error(
          `Temporal at ${options.address} (namespace ${options.namespace}) did not answer within pipeline.temporal.connect-wait (${Math.round(options.waitMs / 1000)} s, ${attempt} attempts): ${error}`,
        );
      }
      options.log.warn({ event: 'temporal_connect_waiting', address: options.address, namespace: options.namespace, attempt, nextInMs, error });
      options.onWaiting?.({ attempt, error, nextInMs });
      await sleep(nextInMs);
    }
  }
}
