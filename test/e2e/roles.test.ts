/**
 * Split roles: one API process and two worker processes (separate node processes, the
 * service configured from the environment as `npm start` is) against one dev server and
 * one Postgres. 200 executions spread over both workers; one worker is SIGKILLed while a
 * step runs, and the other finishes its steps: nothing lost, nothing committed twice.
 * Run on both paths (`pipeline.orchestrator.fast-path` in every process's environment): each
 * step a regular activity, and on the fast path (each step a local activity, all three in one
 * workflow task: the killed worker's workflow tasks time out and the survivor replays them).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { workflowIdFor } from '../../src/ids';
import { SUBMIT_TOKEN, TEST_TOKENS } from '../helpers/engine';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';
import { until } from '../helpers/until';

const EXECUTIONS = 200;
const STEPS = 3;
/** The first worker is killed once it has finished this many steps (of 600), so both have a share first. */
const KILL_AFTER_STEPS = 100;

interface RoleProcess {
  role: 'api' | 'worker';
  child: ChildProcess;
  port: number;
  url: string;
}

describe.each([
  { path: 'regular activities', fastPath: false },
  { path: 'the fast path (local activities)', fastPath: true },
])('one API process and two worker processes, $path', ({ fastPath }) => {
  let database: TestDatabase;
  let taskQueue: string;
  const processes: RoleProcess[] = [];

  async function startRole(role: 'api' | 'worker'): Promise<RoleProcess> {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/role-process.ts'], {
      env: {
        ...process.env,
        PIPELINE_ROLE: role,
        DATABASE_URL: database.url,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        PIPELINE_TEMPORAL_TASK_QUEUE: taskQueue,
        PIPELINE_SERVER_PORT: '0',
        PIPELINE_AUTH_TOKENS: JSON.stringify(TEST_TOKENS),
        PIPELINE_SWEEPER_INTERVAL: '500ms',
        // A killed worker's step is redelivered once its heartbeat is missed.
        PIPELINE_ORCHESTRATOR_WORKER_HEARTBEAT_TIMEOUT: '2s',
        PIPELINE_SHUTDOWN_GRACE_PERIOD: '5s',
        // Three processes fill their pools in the 200-execution burst: idle connections go back to the
        // server within a second, not the default 10, so suites side by side stay under max_connections.
        PIPELINE_STORE_IDLE_TIMEOUT: '1s',
        // The API plans each run (the choice is fixed in its input); the workers are told the same.
        PIPELINE_ORCHESTRATOR_FAST_PATH: String(fastPath),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const started: RoleProcess = { role, child, port: 0, url: '' };
    processes.push(started);
    let out = '';
    child.stdout!.on('data', (chunk) => (out += chunk));
    const ready = new RegExp(`ready ${role} port (\\d+)\n`);
    await until(
      () => {
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${role} process exited with ${child.exitCode ?? child.signalCode}`);
        return ready.test(out);
      },
      90_000,
      `the ${role} process to start`,
    );
    // The port it bound (started on 0), from its ready line.
    started.port = Number(ready.exec(out)![1]);
    started.url = `http://127.0.0.1:${started.port}`;
    return started;
  }

  async function readyz(proc: RoleProcess): Promise<{ status: number; body: any }> {
    const res = await fetch(`${proc.url}/readyz`);
    return { status: res.status, body: await res.json() };
  }

  beforeAll(async () => {
    database = await createTestDatabase();
    taskQueue = `roles-${fastPath ? 'fast' : 'plain'}-${process.pid}-${Date.now()}`;
    await database.db.query(
      `CREATE TABLE test_step_run (id bigserial PRIMARY KEY, transition_key text NOT NULL, phase text NOT NULL, pid integer NOT NULL, identity text NOT NULL)`,
    );
    // A worker whose pid is here holds every step it starts (test/fixtures/role-process.ts): the kill surely lands mid-step.
    await database.db.query('CREATE TABLE test_hold (pid integer PRIMARY KEY)');
  });

  afterAll(async () => {
    for (const proc of processes) if (proc.child.exitCode === null) proc.child.kill('SIGKILL');
    await database?.drop();
  });

  it('spread 200 executions over both workers; a SIGKILLed worker loses nothing and commits nothing twice', async () => {
    const [api, first, second] = await Promise.all([startRole('api'), startRole('worker'), startRole('worker')]);

    // Readiness per role: the API has no worker to check; the workers report theirs running.
    expect(await readyz(api)).toEqual({ status: 200, body: { status: 'ready', checks: { postgres: 'up', temporal: 'up' } } });
    for (const worker of [first, second]) {
      expect(await readyz(worker)).toEqual({ status: 200, body: { status: 'ready', checks: { postgres: 'up', temporal: 'up', worker: 'up' } } });
      // The worker role serves the health routes only.
      const submit = await fetch(`${worker.url}/pipeline/api/tenants/acme/executions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${SUBMIT_TOKEN}`, 'content-type': 'application/json' },
        body: '{}',
      });
      expect(submit.status).toBe(404);
      expect((await fetch(`${worker.url}/metrics`)).status).toBe(200);
    }

    // Submit through the API process only, ten at a time.
    // Both blocks share the dev server: each its own execution ids (and so workflow ids).
    const ids = Array.from({ length: EXECUTIONS }, (_, i) => `spread-${fastPath ? 'fast' : 'plain'}-${i}`);
    let killed = false;
    let heldAfter: number | null = null;
    const killFirstMidStep = async () => {
      if (killed) return;
      // Once the first worker has ended enough steps, it holds every step it starts from then on;
      // it is killed inside one of those, so the kill interrupts a step whatever the machine's speed.
      if (heldAfter === null) {
        const ran = await database.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM test_step_run WHERE pid = $1 AND phase = 'end'`, [first.child.pid]);
        if (ran.rows[0].n < KILL_AFTER_STEPS) return;
        const last = await database.db.query<{ id: string | null }>('SELECT max(id)::text AS id FROM test_step_run');
        await database.db.query('INSERT INTO test_hold (pid) VALUES ($1)', [first.child.pid]);
        heldAfter = Number(last.rows[0].id ?? 0);
      }
      const held = await database.db.query(`SELECT 1 FROM test_step_run WHERE pid = $1 AND phase = 'start' AND id > $2 LIMIT 1`, [first.child.pid, heldAfter]);
      if (held.rowCount! > 0) {
        killed = true;
        first.child.kill('SIGKILL');
      }
    };
    for (let i = 0; i < ids.length; i += 10) {
      await Promise.all(
        ids.slice(i, i + 10).map(async (executionId) => {
          const res = await fetch(`${api.url}/pipeline/api/tenants/acme/executions`, {
            method: 'POST',
            headers: { authorization: `Bearer ${SUBMIT_TOKEN}`, 'content-type': 'application/json' },
            body: JSON.stringify({ pipeline: 'spread', executionId, input: { n: executionId } }),
          });
          expect(res.status).toBe(202);
        }),
      );
      await killFirstMidStep();
    }
    await until(
      async () => {
        await killFirstMidStep();
        return killed;
      },
      120_000,
      `the first worker to have run ${KILL_AFTER_STEPS} steps and be inside one`,
    );
    if (first.child.exitCode === null && first.child.signalCode === null) await once(first.child, 'exit');
    const killedPid = first.child.pid!;
    const survivorPid = second.child.pid!;

    // Everything finishes on the survivor.
    await until(
      async () => {
        const done = await database.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM execution_record WHERE status = 'SUCCEEDED'`);
        return done.rows[0].n === EXECUTIONS;
      },
      240_000,
      `all ${EXECUTIONS} executions to succeed`,
    );

    const records = await database.db.query<{ execution_id: string; status: string; version: number }>(
      `SELECT execution_id, status, version FROM execution_record`,
    );
    expect(records.rowCount).toBe(EXECUTIONS);
    // created + RUNNING + one commit per step: no transition was committed twice.
    expect(records.rows.filter((row) => row.version !== 2 + STEPS)).toEqual([]);

    // Spread: both workers ran steps (by the identity each step recorded).
    const byPid = await database.db.query<{ pid: number; identity: string; n: number }>(
      `SELECT pid, identity, count(*)::int AS n FROM test_step_run WHERE phase = 'end' GROUP BY pid, identity`,
    );
    const ends = new Map(byPid.rows.map((row) => [row.pid, row.n]));
    console.info(`split roles: steps ended per worker ${JSON.stringify(Object.fromEntries(ends))} (killed ${first.child.pid}, survivor ${second.child.pid})`);
    expect(ends.get(killedPid)).toBeGreaterThanOrEqual(KILL_AFTER_STEPS);
    expect(ends.get(survivorPid)).toBeGreaterThan(0);
    expect([...ends.keys()].sort()).toEqual([killedPid, survivorPid].sort());
    // The steps the kill interrupted (started on the killed worker, never ended there) ended on the survivor.
    const interrupted = await database.db.query<{ transition_key: string; ended_by: number[] }>(
      `SELECT s.transition_key, array_agg(e.pid) FILTER (WHERE e.pid IS NOT NULL) AS ended_by
         FROM test_step_run s LEFT JOIN test_step_run e ON e.transition_key = s.transition_key AND e.phase = 'end'
        WHERE s.pid = $1 AND s.phase = 'start'
          AND NOT EXISTS (SELECT 1 FROM test_step_run k WHERE k.transition_key = s.transition_key AND k.pid = $1 AND k.phase = 'end')
        GROUP BY s.transition_key`,
      [killedPid],
    );
    expect(interrupted.rowCount).toBeGreaterThan(0);
    console.info(`split roles: ${interrupted.rowCount} step(s) interrupted by the SIGKILL, finished by the survivor`);
    // (At least once: a step whose heartbeat came late on the loaded survivor may run there twice; its commit counts once.)
    for (const row of interrupted.rows) expect([...new Set(row.ended_by)]).toEqual([survivorPid]);
    // Each transition ended at least once, and every execution's steps all ended.
    const endedKeys = await database.db.query<{ n: number }>(`SELECT count(DISTINCT transition_key)::int AS n FROM test_step_run WHERE phase = 'end'`);
    expect(endedKeys.rows[0].n).toBe(EXECUTIONS * STEPS);

    // Temporal's own record agrees: the tasks of an interrupted execution were started by the two
    // workers' identities and nobody else (its activity tasks, or on the fast path its workflow
    // tasks, which run its steps as local activities: one marker per step, the killed worker's
    // task timed out).
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      const client = new Client({ connection });
      const executionId = interrupted.rows[0].transition_key.split(':')[0];
      const handle = client.workflow.getHandle(workflowIdFor('acme', executionId));
      // The record is SUCCEEDED at the last step's commit; the run closes (and records the last marker) after it.
      await handle.result();
      const history = await handle.fetchHistory();
      const events = history.events!;
      const identities = new Set(
        events.flatMap((e) => (fastPath ? e.workflowTaskStartedEventAttributes?.identity : e.activityTaskStartedEventAttributes?.identity) ?? []),
      );
      const known = new Set(byPid.rows.map((row) => row.identity));
      expect(identities.size).toBeGreaterThan(0);
      expect([...identities].filter((identity) => !known.has(identity))).toEqual([]);
      const scheduled = events.filter((e) => e.activityTaskScheduledEventAttributes).length;
      const markers = events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity').length;
      // On the fast path the survivor's first real step may answer for steps the killed worker
      // committed (it carries on from the record's step): one to three markers, never an activity.
      if (fastPath) expect({ scheduled, markers: markers >= 1 && markers <= STEPS }).toEqual({ scheduled: 0, markers: true });
      else expect({ scheduled, markers }).toEqual({ scheduled: STEPS, markers: 0 });
      if (fastPath) expect(events.some((e) => e.workflowTaskTimedOutEventAttributes)).toBe(true);
    } finally {
      await connection.close();
    }

    // The survivor and the API stop gracefully on SIGTERM.
    for (const proc of [second, api]) {
      proc.child.kill('SIGTERM');
      const [code] = await once(proc.child, 'exit');
      expect(code).toBe(0);
    }
  });
});
