import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { TaskQueuePollers } from './task-queue-pollers';

/** A client whose DescribeTaskQueue answers what `answer` gives, counting the calls (the real call is proven in test/integration/bulk-run-queue.test.ts). */
function fakeClient(answer: () => Promise<{ pollers: unknown[] }>) {
  const calls: string[] = [];
  const client = {
    options: { namespace: 'default' },
    connection: { withDeadline: (_at: number, fn: () => unknown) => fn(), withAbortSignal: (_signal: AbortSignal, fn: () => unknown) => fn() },
    workflowService: {
      describeTaskQueue: (request: { taskQueue: { name: string } }) => {
        calls.push(request.taskQueue.name);
        return answer();
      },
    },
  } as unknown as Client;
  return { client, calls };
}

describe('TaskQueuePollers', () => {
  it('answers whether a queue has pollers, asking Temporal once per queue within its ttl', async () => {
    const { client, calls } = fakeClient(async () => ({ pollers: calls.at(-1) === 'served' ? [{ identity: 'w' }] : [] }));
    const pollers = new TaskQueuePollers(client, 1000, 300, 60_000);
    expect(await pollers.polled('served')).toBe(true);
    expect(await pollers.polled('empty')).toBe(false);
    expect(await pollers.polled('empty')).toBe(false);
    expect(calls).toEqual(['served', 'empty']);
  });

  it('says "unknown" (null) when Temporal is slow, without waiting for it again, and keeps the answer once it comes', async () => {
    let release!: () => void;
    const { client, calls } = fakeClient(() => new Promise((resolve) => (release = () => resolve({ pollers: [] }))));
    const pollers = new TaskQueuePollers(client, 10_000, 20, 60_000);
    expect(await pollers.polled('bulk')).toBeNull();
    // The call is still out: the next read gets the last answer at once, and asks nothing more.
    expect(await Promise.race([pollers.polled('bulk'), new Promise((resolve) => setTimeout(() => resolve('waited'), 15))])).toBeNull();
    // The service's stop waits for the call that is still out before it closes the connection.
    let settled = false;
    const stop = pollers.settled().then(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(settled).toBe(false);
    release();
    await stop;
    expect(await pollers.polled('bulk')).toBe(false);
    expect(calls).toEqual(['bulk']);
  });

  it('says "unknown" when Temporal refuses, and asks again after the ttl', async () => {
    const { client, calls } = fakeClient(async () => {
      throw new Error('UNAVAILABLE');
    });
    const pollers = new TaskQueuePollers(client, 1000, 300, 0);
    expect(await pollers.polled('bulk')).toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 1));
    expect(await pollers.polled('bulk')).toBeNull();
    expect(calls).toEqual(['bulk', 'bulk']);
  });
});
