import type { Connection } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../errors';
import { createLog } from '../log';
import { connectWaiting } from './connect-wait';

const log = createLog({ level: 'silent' });

function fakeConnection(describe: () => Promise<unknown>): Connection {
  return { workflowService: { describeNamespace: describe }, close: async () => undefined } as unknown as Connection;
}

describe('connectWaiting', () => {
  it('tries again with growing waits until the namespace answers', async () => {
    const waits: number[] = [];
    let attempts = 0;
    const connection = await connectWaiting({
      address: 'temporal:7233',
      namespace: 'default',
      waitMs: 600_000,
      log,
      sleep: async (ms) => void waits.push(ms),
      connect: async () => {
        attempts++;
        if (attempts < 3) throw new Error('connection refused');
        return fakeConnection(async () => (attempts < 4 ? Promise.reject(new Error('Namespace default is not found')) : {}));
      },
    });
    expect(connection).toBeDefined();
    expect(attempts).toBe(4);
    expect(waits).toHaveLength(3);
    expect(waits[2]).toBeGreaterThanOrEqual(waits[0]);
  });

  it('gives up after pipeline.temporal.connect-wait, naming the key', async () => {
    await expect(
      connectWaiting({ address: 'temporal:7233', namespace: 'default', waitMs: 0, log, connect: async () => Promise.reject(new Error('connection refused')) }),
    ).rejects.toThrow(/did not answer within pipeline\.temporal\.connect-wait \(0 s, 1 attempts\): connection refused/);
  });

  it('does not wait on a wrong setting', async () => {
    let attempts = 0;
    await expect(
      connectWaiting({
        address: 'temporal:7233',
        namespace: 'default',
        waitMs: 600_000,
        log,
        connect: async () => {
          attempts++;
          throw new ConfigError('TEMPORAL_TLS_SERVER_CA_CERT_PATH: cannot read /nope');
        },
      }),
    ).rejects.toThrow(ConfigError);
    expect(attempts).toBe(1);
  });
});
