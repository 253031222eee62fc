/**
 * Readiness (`GET /readyz`): can this process do its job right now? Postgres answers a
 * query, Temporal answers a call, each within the call deadline (`pipeline.temporal.call-timeout`),
 * and in a process that runs the worker, the worker is RUNNING. A stopping process is not
 * ready, so an orchestrator takes it out of rotation while it drains.
 * Liveness (`/healthz`) stays a plain 200: a process that cannot reach Postgres is alive.
 */
import type { Client } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import { ping, type Db } from '../store/db';
import { withCallDeadline } from '../temporal/call-deadline';

export type CheckState = 'up' | 'down';

export interface ReadinessReport {
  ready: boolean;
  /** per dependency: `up`, or `down` with the reason in `errors` */
  checks: Record<string, CheckState>;
  errors: Record<string, string>;
}

export interface ReadinessDeps {
  db: Db;
  client: Client;
  /** present in the roles that run the worker */
  worker?: () => Worker | undefined;
  timeoutMs: number;
}

export class Readiness {
  private stopping = false;

  constructor(private readonly deps: ReadinessDeps) {}

  /** From now on the process answers "not ready" (graceful shutdown has begun). */
  markStopping(): void {
    this.stopping = true;
  }

  async check(): Promise<ReadinessReport> {
    const { db, client, timeoutMs } = this.deps;
    const probes: Record<string, Promise<void>> = {
      postgres: withDeadline(ping(db), timeoutMs, 'postgres'),
      temporal: withCallDeadline(client, timeoutMs, () => client.connection.workflowService.getSystemInfo({})).then(() => undefined),
    };
    if (this.deps.worker) {
      const worker = this.deps.worker();
      const state = worker?.getState() ?? 'not started';
      probes.worker = state === 'RUNNING' ? Promise.resolve() : Promise.reject(new Error(`worker is ${state}`));
    }
    const checks: Record<string, CheckState> = {};
    const errors: Record<string, string> = {};
    await Promise.all(
      Object.entries(probes).map(async ([name, probe]) => {
        try {
          await probe;
          checks[name] = 'up';
        } catch (err) {
          checks[name] = 'down';
          errors[name] = describe(err);
        }
      }),
    );
    if (this.stopping) errors.process = 'shutting down';
    return { ready: !this.stopping && Object.values(checks).every((state) => state === 'up'), checks, errors };
  }
}

/** One line, no payloads: the error's class and the first line of its message. */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return 'unavailable';
  const first = err.message.split('\n')[0].slice(0, 200);
  return first || err.name;
}

function withDeadline<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${timeoutMs} ms`)), timeoutMs);
  });
  promise.catch(() => undefined);
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
