/**
 * The conformance checker against real workers on loopback: the Python reference worker
 * (python3, started on port 0, checked through the `pipeline-worker-check` bin with --json),
 * the TypeScript kit over REST and gRPC (on its Postgres dedupe table), and a deliberately
 * broken worker that fails exactly the contract point it breaks.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve, type ServerType } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runChecks, CHECK_IDS, type CheckResult } from '../../src/worker-check/checks';
import type { CheckReport } from '../../src/worker-check/report';
import { grpcWorkerClient, restWorkerClient } from '../../src/worker-check/worker-client';
import {
  createGrpcTransitionWorker,
  createRestTransitionWorker,
  ensureDedupeSchema,
  withConformanceMode,
  type GrpcTransitionWorker,
} from '@pipeline-orchestrator/worker-kit';
import { startPythonWorker } from '../../examples/invoices/test/python-worker';
import { FAULTS, startBrokenWorker, VARIANTS, type Fault, type Protocol, type Variant } from '../fixtures/broken-worker';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';
import { scaled } from '../helpers/time-scale';
import { retryUntilSuccess } from '../helpers/until';

const root = join(import.meta.dirname, '..', '..');
/** Handler runs of the kit's conformance handler, by idempotency key. */
const kitRuns: Record<string, number> = {};

let workerDb: TestDatabase;
let kitServer: ServerType;
let kitUrl = '';
let grpcKit: GrpcTransitionWorker;
let grpcAddress = '';
let python: ChildProcess;
let pythonUrl = '';
const scratch = mkdtempSync(join(tmpdir(), 'python-worker-'));

const statuses = (checks: CheckResult[]) => Object.fromEntries(checks.map((check) => [check.id, check.status]));
/** The checker's client for a broken worker's target, as the CLI would build it (with the lookup). */
const clientFor = (protocol: Protocol, target: string) =>
  protocol === 'REST' ? restWorkerClient(target, `${target}/{idempotencyKey}`) : grpcWorkerClient(target, true);
const failed = (checks: CheckResult[]) => checks.filter((check) => check.status === 'fail').map((check) => `${check.id}: ${check.detail}`);

/** The Python reference worker in conformance mode on port 0; `extra` arguments after the defaults. */
const spawnPython = (db: string, extra: string[] = []) => startPythonWorker({ db, args: ['--conformance', ...extra] });

async function startPython(): Promise<void> {
  ({ child: python, url: pythonUrl } = await spawnPython(join(scratch, 'dedupe.sqlite3')));
}

beforeAll(async () => {
  workerDb = await createTestDatabase();
  await ensureDedupeSchema(workerDb.db);
  const handler = withConformanceMode(async (_input, call: { idempotencyKey: string }) => ({ ordinary: call.idempotencyKey }));
  const counted = async (input: unknown, call: { idempotencyKey: string }) => {
    kitRuns[call.idempotencyKey] = (kitRuns[call.idempotencyKey] ?? 0) + 1;
    return handler(input, call);
  };
  // A short duplicate wait, so a redelivery while the handler sleeps is answered "in progress".
  const rest = createRestTransitionWorker({ db: workerDb.db, platform: 'kit-conformance/1.0', handler: counted, duplicateWaitMs: 200 });
  kitServer = serve({ fetch: rest.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((resolve) => kitServer.once('listening', resolve));
  kitUrl = `http://127.0.0.1:${(kitServer.address() as { port: number }).port}/transition`;
  grpcKit = createGrpcTransitionWorker({ db: workerDb.db, platform: 'kit-conformance/1.0', handler: counted, duplicateWaitMs: 200 });
  grpcAddress = await grpcKit.listen();
  await startPython();
});
afterAll(async () => {
  if (python && python.exitCode === null) {
    const exited = new Promise((resolve) => python.once('exit', resolve));
    python.kill('SIGTERM');
    await exited;
  }
  rmSync(scratch, { recursive: true, force: true });
  await new Promise((resolve) => kitServer?.close(resolve));
  await grpcKit?.stop();
  await workerDb?.drop();
});

describe('pipeline-worker-check', () => {
  it('passes the Python reference worker through the bin: exit 0, every check passing, as JSON', async () => {
    const child = spawn(process.execPath, [join(root, 'bin', 'pipeline-worker-check.mjs'), pythonUrl, '--json', '--busy-ms', String(scaled(2000))], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    const report = JSON.parse(out) as CheckReport;
    expect(failed(report.checks)).toEqual([]);
    expect(report).toMatchObject({ protocol: 'REST', target: pythonUrl, passed: true });
    expect(report.checks.map((check) => check.id)).toEqual([...CHECK_IDS]);
    expect(statuses(report.checks)).toEqual(Object.fromEntries(CHECK_IDS.map((id) => [id, 'pass'])));
    // The Python worker continues the trace it was sent.
    expect(report.checks.find((check) => check.id === 'traceparent')?.detail).toMatch(/continued/);
    expect(code).toBe(0);
  });

  it('the Python reference worker, SIGKILLed mid-handler, never runs that key again: answered "in progress", looked up ABANDONED', async () => {
    const db = join(scratch, 'abandoned.sqlite3');
    const key = 'acme/py-abandoned:0:1';
    const deliver = (url: string) =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ conformance: { sleepMs: 60_000, echo: 'first' } }),
      });
    const lookup = async (url: string) => (await fetch(`${url}/${encodeURIComponent(key)}`)).json();
    const first = await spawnPython(db, ['--lease-ms', '500', '--duplicate-wait-ms', '100']);
    void deliver(first.url).catch(() => undefined);
    await retryUntilSuccess(async () => expect(await lookup(first.url)).toMatchObject({ recorded: true, state: 'IN_PROGRESS' }));
    const exited = new Promise((resolve) => first.child.once('exit', resolve));
    first.child.kill('SIGKILL');
    await exited;

    const second = await spawnPython(db, ['--lease-ms', '500', '--duplicate-wait-ms', '100']);
    try {
      await retryUntilSuccess(async () => expect(await lookup(second.url)).toMatchObject({ recorded: true, state: 'ABANDONED' }));
      const again = await deliver(second.url);
      expect(again.status).toBe(425);
      expect(again.headers.get('x-transition-in-progress')).toBe('true');
      expect(await lookup(second.url)).toMatchObject({ recorded: true, state: 'ABANDONED' });
    } finally {
      const gone = new Promise((resolve) => second.child.once('exit', resolve));
      second.child.kill('SIGKILL');
      await gone;
    }
  });

  it('passes the TypeScript kit over REST, and its handler ran once per key the checker sent', async () => {
    const checks = await runChecks(restWorkerClient(kitUrl, `${kitUrl}/{idempotencyKey}`), { busyMs: scaled(2000) });
    expect(failed(checks)).toEqual([]);
    expect(checks.find((check) => check.id === 'busy-redelivery')?.detail).toMatch(/in progress/);
    // The kit's TransitionRetryableError (withConformanceMode throws it) carries the failure's own code.
    expect(checks.find((check) => check.id === 'problem-retryable')?.detail).toContain('CONFORMANCE_UNAVAILABLE (retryable)');
    const counts = Object.entries(kitRuns).filter(([key]) => key.includes('-busy:') || key.includes('-basic:') || key.includes('-deadline:'));
    expect(counts.length).toBeGreaterThanOrEqual(4);
    expect(counts.filter(([, runs]) => runs !== 1)).toEqual([]);
  });

  it('passes the TypeScript kit over gRPC', async () => {
    const checks = await runChecks(grpcWorkerClient(grpcAddress, true), { busyMs: scaled(2000) });
    expect(failed(checks)).toEqual([]);
    expect(checks.find((check) => check.id === 'problem-retryable')?.detail).toContain('CONFORMANCE_UNAVAILABLE (retryable)');
    expect(checks.every((check) => check.status === 'pass')).toBe(true);
  });

  it.each(['REST', 'GRPC'] as const)(
    'passes the broken worker over %s with no fault switched on (the faults below are the only difference)',
    async (protocol) => {
      const worker = await startBrokenWorker(null, protocol);
      try {
        const checks = await runChecks(clientFor(protocol, worker.target), { busyMs: scaled(800) });
        expect(failed(checks)).toEqual([]);
        expect(statuses(checks)).toEqual(Object.fromEntries(CHECK_IDS.map((id) => [id, 'pass'])));
      } finally {
        await worker.close();
      }
    },
  );

  it.each(['REST', 'GRPC'] as const)(
    'passes a worker over %s that answers unlike the kit but gives the service the same outcome (bare 503, platform on failures only)',
    async (protocol) => {
      const variants = Object.keys(VARIANTS) as Variant[];
      const outcomes = await Promise.all(
        variants.map(async (variant) => {
          const worker = await startBrokenWorker(variant, protocol);
          try {
            return [variant, failed(await runChecks(clientFor(protocol, worker.target), { busyMs: scaled(800) }))] as const;
          } finally {
            await worker.close();
          }
        }),
      );
      expect(Object.fromEntries(outcomes)).toEqual(Object.fromEntries(variants.map((variant) => [variant, []])));
      const plain = await startBrokenWorker('plain-retryable', protocol);
      try {
        const checks = await runChecks(clientFor(protocol, plain.target), { busyMs: scaled(800) });
        expect(checks.find((check) => check.id === 'problem-retryable')?.detail).toMatch(/retried/);
      } finally {
        await plain.close();
      }
    },
  );

  it.each(['REST', 'GRPC'] as const)('fails a worker over %s that breaks one contract point on exactly that point, for every point', async (protocol) => {
    const faults = Object.keys(FAULTS) as Fault[];
    expect(new Set(Object.values(FAULTS))).toEqual(new Set(CHECK_IDS));
    const outcomes = await Promise.all(
      faults.map(async (fault) => {
        const worker = await startBrokenWorker(fault, protocol);
        try {
          const checks = await runChecks(clientFor(protocol, worker.target), { busyMs: scaled(800) });
          return [fault, statuses(checks)[FAULTS[fault]]] as const;
        } finally {
          await worker.close();
        }
      }),
    );
    expect(Object.fromEntries(outcomes)).toEqual(Object.fromEntries(faults.map((fault) => [fault, FAULTS[fault] === 'platform' ? 'warn' : 'fail'])));
  });

  it.each(['REST', 'GRPC'] as const)('a worker over %s without conformance mode gets one row saying so, the rest not checked', async (protocol) => {
    const worker = await startBrokenWorker('no-conformance-mode', protocol);
    try {
      const checks = await runChecks(clientFor(protocol, worker.target), { busyMs: scaled(800) });
      expect(checks.filter((check) => check.status === 'fail')).toEqual([
        expect.objectContaining({ id: 'answers', detail: expect.stringContaining('the worker ignored the conformance input') }),
      ]);
      expect(checks.filter((check) => check.status === 'skip').map((check) => check.id)).toEqual(
        CHECK_IDS.filter((id) => id !== 'answers' && id !== 'platform'),
      );
    } finally {
      await worker.close();
    }
  });

  it.each(['REST', 'GRPC'] as const)('a worker over %s that ignores the conformance sleep fails lookup-while-busy: nothing was running', async (protocol) => {
    const worker = await startBrokenWorker('ignores-sleep', protocol);
    try {
      const checks = await runChecks(clientFor(protocol, worker.target), { busyMs: scaled(800) });
      expect(checks.find((check) => check.id === 'lookup-while-busy')).toMatchObject({
        status: 'fail',
        detail: expect.stringContaining('nothing was running'),
      });
    } finally {
      await worker.close();
    }
  });

  it('exits 1 with a FAIL row for a broken worker, and 2 on wrong usage', async () => {
    const worker = await startBrokenWorker('plain-rejection');
    const url = worker.target;
    const run = async (args: string[]) => {
      const child = spawn(process.execPath, [join(root, 'bin', 'pipeline-worker-check.mjs'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
      child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
      return { code: await new Promise<number | null>((resolve) => child.once('exit', resolve)), out };
    };
    try {
      const broken = await run([url, '--busy-ms', String(scaled(500))]);
      expect(broken.code).toBe(1);
      expect(broken.out).toMatch(/problem-rejection\s+FAIL/);
      expect(broken.out).toContain('DOES NOT CONFORM');
      const usage = await run(['--busy-ms', '0', url]);
      expect(usage.code).toBe(2);
      expect(usage.out).toContain('--busy-ms 0');
    } finally {
      await worker.close();
    }
  });
});
