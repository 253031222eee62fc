/**
 * Closing the service's Temporal client while a call is being retried (Temporal unreachable)
 * settles the call and throws nothing from a timer: the SDK's retry fires on a timer that
 * does not look whether the connection was closed, and a retry after close used to throw
 * "Channel has been shut down" as an uncaught exception (seen when the service stopped while
 * Temporal was paused).
 */
import { afterAll, expect, inject, it } from 'vitest';
import { connectClient } from '../../src/temporal/connection';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy';

let proxy: TcpProxy | undefined;
afterAll(async () => proxy?.close());

it('settles a call under retry when the client closes, with no uncaught exception', async () => {
  const [host, port] = inject('temporalAddress').split(':');
  proxy = await startTcpProxy({ host, port: Number(port) });
  const connection = await connectClient({ address: `127.0.0.1:${proxy.port}` });
  const uncaught: unknown[] = [];
  const monitor = (err: unknown) => uncaught.push(err);
  process.on('uncaughtExceptionMonitor', monitor);
  try {
    await proxy.setDown(true);
    const call = connection.workflowService.getSystemInfo({}).then(
      () => 'answered',
      (err: Error) => err.message,
    );
    // Let a few attempts fail and their retries go onto timers, then close.
    await new Promise((resolve) => setTimeout(resolve, 400));
    await connection.close();
    const outcome = await Promise.race([call, new Promise((resolve) => setTimeout(() => resolve('still pending 10 s after close'), 10_000))]);
    expect(outcome).toMatch(/UNAVAILABLE|No connection established|Call cancelled|Channel/i);
    await new Promise((resolve) => setTimeout(resolve, 500)); // a stray timer would have fired by now
    expect(uncaught).toEqual([]);
  } finally {
    process.off('uncaughtExceptionMonitor', monitor);
  }
}, 60_000);
