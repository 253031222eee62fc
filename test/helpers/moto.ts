/** moto's SQS-compatible server on a leased loopback port (src/port-allocator.ts), for the SQS DLQ provider tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { scaled } from './time-scale';
import { leasePort } from '../../src/port-allocator';

export interface Moto {
  endpoint: string;
  stop(): Promise<void>;
}

export async function startMoto(): Promise<Moto> {
  const lease = await leasePort();
  const port = lease.port;
  const pythonPath = [resolve('.tools/pip'), process.env.PYTHONPATH].filter(Boolean).join(':');
  const child: ChildProcess = spawn('python3', ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(port)], {
    env: { ...process.env, PYTHONPATH: pythonPath },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + scaled(30_000);
  for (;;) {
    const failure = child.exitCode !== null ? 'exited' : Date.now() > deadline ? 'did not come up' : undefined;
    if (failure) {
      child.kill('SIGKILL');
      lease.release();
      throw new Error(`moto_server ${failure}: ${stderr.slice(-500)}`);
    }
    try {
      await fetch(`${endpoint}/moto-api/`);
      break;
    } catch {
      await new Promise((done) => setTimeout(done, 200));
    }
  }
  return {
    endpoint,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((done) => child.once('exit', done));
        child.kill('SIGTERM');
        await exited;
      }
      lease.release();
    },
  };
}
