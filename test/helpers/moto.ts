/** moto's SQS-compatible server on a free loopback port, for the SQS DLQ provider tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { freePort } from '../../src/net';

export interface Moto {
  endpoint: string;
  stop(): Promise<void>;
}

export async function startMoto(): Promise<Moto> {
  const port = await freePort();
  const pythonPath = [resolve('.tools/pip'), process.env.PYTHONPATH].filter(Boolean).join(':');
  const child: ChildProcess = spawn('python3', ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(port)], {
    env: { ...process.env, PYTHONPATH: pythonPath },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`moto_server exited: ${stderr.slice(-500)}`);
    try {
      await fetch(`${endpoint}/moto-api/`);
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`moto_server did not come up: ${stderr.slice(-500)}`);
      await new Promise((done) => setTimeout(done, 200));
    }
  }
  return {
    endpoint,
    async stop() {
      child.kill('SIGTERM');
    },
  };
}
