/**
 * A connection the server drops under a call in flight is retried by the service's Temporal
 * client (`connectClient`): the SDK's retry of UNAVAILABLE stays in place under the
 * interceptors the caller adds. The bench once connected with its own call counter as the
 * only interceptor, which replaced the SDK's retry: a dropped connection under a workflow's
 * `result()` long poll failed a whole figure with "14 UNAVAILABLE: Connection dropped" (CI
 * s59a, Node 24). Here a TCP proxy between the client and the real dev server drops every
 * connection while `result()` waits; the workflow (no worker polls its queue) is then
 * terminated, and `result()` must report that ending, not the drop.
 */
import { randomUUID } from 'node:crypto';
import { InterceptingCall, type Interceptor } from '@grpc/grpc-js';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { afterAll, expect, inject, it } from 'vitest';
import { connectClient } from '../../src/temporal/connection';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy';
import { until } from '../helpers/until';

const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

it('answers result() after the server dropped the connection under its long poll, counting each attempt', async () => {
  const address = inject('temporalAddress');
  const [host, port] = address.split(':');
  const proxy: TcpProxy = await startTcpProxy({ host, port: Number(port) });
  closers.push(() => proxy.close());
  const attempts: Record<string, number> = {};
  const count: Interceptor = (options, nextCall) => {
    const method = options.method_definition.path.split('/').pop()!;
    attempts[method] = (attempts[method] ?? 0) + 1;
    return new InterceptingCall(nextCall(options));
  };
  const connection = await connectClient({ address: `127.0.0.1:${proxy.port}` }, [count]);
  closers.push(() => connection.close());
  const direct = await Connection.connect({ address });
  closers.push(() => direct.close());

  const workflowId = `client-retry-${randomUUID()}`;
  const client = new Client({ connection });
  // No worker polls this queue: the run stays open until it is terminated below.
  const handle = await client.workflow.start('noSuchWorkflow', { taskQueue: `client-retry-${randomUUID()}`, workflowId, args: [] });
  const result = handle.result().then(
    () => 'completed',
    (err: unknown) => err,
  );
  // The long poll is opened, then given a moment to reach the server (which holds it for about
  // 20 s), and every connection goes. Were it not on the wire yet, the drop would miss it and
  // the test would pass without proving the retry; it never fails for that.
  await until(() => (attempts.GetWorkflowExecutionHistory ?? 0) >= 1, 30_000, 'the result() long poll to open');
  await new Promise((resolve) => setTimeout(resolve, 500));
  const before = attempts.GetWorkflowExecutionHistory;
  await proxy.setDown(true);
  await proxy.setDown(false);
  await new Client({ connection: direct }).workflow.getHandle(workflowId).terminate('the test ends it');

  const outcome = await result;
  expect(outcome).toBeInstanceOf(WorkflowFailedError);
  expect(String((outcome as WorkflowFailedError).cause?.message ?? (outcome as Error).message)).toMatch(/terminated|the test ends it/i);
  // The dropped long poll was attempted again through the same interceptors.
  expect(attempts.GetWorkflowExecutionHistory).toBeGreaterThan(before);
});
