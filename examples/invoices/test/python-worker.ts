/**
 * The Python reference worker (examples/python-worker/worker.py, standard library only) in a
 * process of its own on a port the OS picks: the render step's real worker for the invoices
 * engine test, and the worker the conformance test checks. Its dedupe table is a SQLite file
 * (`db`, or one in a scratch directory removed at stop). Its stdout is one JSON line per event
 * (ids only); `handled` counts the calls whose handler ran and stored an answer, per key.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';

export interface PythonWorker {
  child: ChildProcess;
  /** the transition URL, e.g. http://127.0.0.1:41234/transition */
  url: string;
  /** `transition_handled` lines by transition key (`{executionId}:{stepIndex}:{attempt}`) */
  handled: Map<string, number>;
  /** SIGTERM (or `signal`), waits for the exit, removes the scratch directory if it made one */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

const WORKER = resolve(import.meta.dirname, '..', '..', 'python-worker', 'worker.py');

export async function startPythonWorker(options: { db?: string; args?: string[]; python?: string } = {}): Promise<PythonWorker> {
  const scratch = options.db ? undefined : mkdtempSync(join(tmpdir(), 'python-worker-'));
  const db = options.db ?? join(scratch!, 'dedupe.sqlite3');
  const python = options.python ?? process.env.PYTHON ?? 'python3';
  const child = spawn(python, [WORKER, '--port', '0', '--db', db, ...(options.args ?? [])], { stdio: ['ignore', 'pipe', 'inherit'] });
  const handled = new Map<string, number>();
  const lines = createInterface({ input: child.stdout! });
  const url = await new Promise<string>((resolveUrl, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the Python worker exited (${code}) before it listened`)));
    lines.on('line', (line) => {
      const event = JSON.parse(line) as { event: string; url?: string; transitionKey?: string };
      if (event.event === 'worker_listening') resolveUrl(event.url!);
      if (event.event === 'transition_handled') handled.set(event.transitionKey!, (handled.get(event.transitionKey!) ?? 0) + 1);
    });
  });
  return {
    child,
    url,
    handled,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((done) => child.once('exit', done));
        child.kill(signal);
        await exited;
      }
      if (scratch) rmSync(scratch, { recursive: true, force: true });
    },
  };
}
