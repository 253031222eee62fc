import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ephemeralRange, leaseGivenPort, leasePort, portBlock } from './port-allocator';

/** A second process that leases `port` (or any port for 0), prints it, and holds it until killed. */
async function holderProcess(port: number) {
  const code = `import('./src/port-allocator.ts').then(async (m) => {
    const lease = ${port} ? await m.leaseGivenPort(${port}) : await m.leasePort();
    process.stdout.write((lease ? lease.port : 'refused') + '\\n');
    setInterval(() => undefined, 1000);
  });`;
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(child.stdout!, 'data')) as [Buffer];
  return { child, answer: line.toString().trim() };
}

describe('port leases', () => {
  it('come from this worker block, outside the ephemeral range, and are never handed out twice at once', async () => {
    const [low, high] = ephemeralRange();
    const [first, last] = portBlock();
    const leases = [await leasePort(), await leasePort(), await leasePort()];
    for (const { port } of leases) {
      expect(port).toBeGreaterThanOrEqual(first);
      expect(port).toBeLessThanOrEqual(last);
      expect(port < low || port > high).toBe(true);
    }
    expect(new Set(leases.map((l) => l.port)).size).toBe(3);
    for (const lease of leases) lease.release();
  });

  it('blocks do not overlap between vitest workers', () => {
    const [a, b] = [portBlock({ VITEST_POOL_ID: '1' }), portBlock({ VITEST_POOL_ID: '2' })];
    expect(a[1]).toBeLessThan(b[0]);
  });

  it.runIf(process.platform === 'linux')('a port leased by another process is refused here until that process dies (kill -9 included)', async () => {
    const holder = await holderProcess(0);
    const port = Number(holder.answer);
    expect(port).toBeGreaterThan(0);
    expect(await leaseGivenPort(port)).toBeUndefined();
    holder.child.kill('SIGKILL');
    await once(holder.child, 'exit');
    const lease = await leaseGivenPort(port);
    expect(lease?.port).toBe(port);
    // …and while this process holds it, another process is refused.
    const other = await holderProcess(port);
    expect(other.answer).toBe('refused');
    other.child.kill('SIGKILL');
    lease!.release();
  });

  it('a port something listens on is not leased', async () => {
    const lease = await leasePort();
    lease.release();
    const server = createServer().listen(lease.port, '127.0.0.1');
    await once(server, 'listening');
    try {
      expect(await leaseGivenPort(lease.port)).toBeUndefined();
    } finally {
      server.close();
    }
  });
});
