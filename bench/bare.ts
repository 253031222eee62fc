/**
 * The baseline: a bare Temporal workflow calling N no-op activities, no store, no
 * effects, no DLQ. The workflow half of this file is bundled; the activities run in the
 * same worker as the engine's.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Db } from '../src/store/db';

export const bareActivities = {
  async noop(value: unknown): Promise<unknown> {
    return value;
  },
  async flaky(value: unknown, failTimes: number): Promise<unknown> {
    if (Context.current().info.attempt <= failTimes) throw ApplicationFailure.retryable('flaky', 'BenchFlaky');
    return value;
  },
  /** The memory figure's bare `park`: a dependency that stays down. */
  async down(): Promise<never> {
    throw ApplicationFailure.retryable('dependency down', 'BenchDown');
  },
  /** The memory figure's bare `sleepy`: a long call that ends early when cancelled. */
  async sleep(value: unknown): Promise<unknown> {
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, 600_000);
      Context.current().cancellationSignal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve(null);
      });
    });
    return value;
  },
};

/**
 * The floor (figure 1c): bare Temporal plus the least the product's contract persists, one
 * Postgres commit per step (the record's version moved, an attempt row written, in one
 * prepared statement) and one row at admission, and nothing else of the engine: no plan, no
 * effects, no DLQ, no metadata. The engine's throughput and CPU read against it say how much of
 * the engine's cost over bare is the persistence itself.
 */
export const FLOOR_SCHEMA = `
  CREATE TABLE IF NOT EXISTS bench_floor_record (id text PRIMARY KEY, version int NOT NULL, status text NOT NULL, output jsonb, updated_at timestamptz NOT NULL DEFAULT now());
  CREATE TABLE IF NOT EXISTS bench_floor_attempt (id text NOT NULL, step int NOT NULL, version int NOT NULL, outcome text NOT NULL, at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (id, step));`;

export function floorActivities(db: Db) {
  return {
    async persist(id: string, step: number, last: boolean, value: unknown, _pad?: string): Promise<unknown> {
      const result = await db.prepared<{ version: number }>(
        `WITH moved AS (
           UPDATE bench_floor_record SET version = version + 1, status = $3, output = $4::jsonb, updated_at = now()
           WHERE id = $1 AND version = $2 RETURNING version),
         logged AS (INSERT INTO bench_floor_attempt (id, step, version, outcome) SELECT $1, $2, version, 'SUCCEEDED' FROM moved RETURNING 1)
         SELECT version FROM moved`,
        [id, step, last ? 'SUCCEEDED' : 'RUNNING', JSON.stringify(value ?? null)],
      );
      if (!result.rowCount) throw ApplicationFailure.nonRetryable(`floor record ${id} was not at step ${step}`, 'BenchFloor');
      return value;
    },
  };
}

/** The floor's admission: the record row, one round trip, before the start. */
export async function admitFloor(db: Db, id: string): Promise<void> {
  await db.prepared(`INSERT INTO bench_floor_record (id, version, status) VALUES ($1, 1, 'QUEUED')`, [id]);
}
