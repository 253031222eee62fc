/**
 * The worker kit stands alone: `npm pack` in packages/worker-kit (which builds it), the tarball
 * installed into a scratch directory outside the repository with nothing of the orchestrator,
 * `npx worker-kit-migrate` run there against a fresh Postgres database (twice: idempotent), and
 * the README's quick-start worker, extracted from packages/worker-kit/README.md as written, run
 * there with plain Node. Its effects (rows in `sent_greetings`) are counted per key: one per
 * idempotency key however often and however concurrently it is delivered.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, lstatSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_URL } from '../helpers/postgres';
import { until } from '../helpers/until';

const root = join(import.meta.dirname, '..', '..');
const kitRoot = join(root, 'packages', 'worker-kit');
const readme = readFileSync(join(kitRoot, 'README.md'), 'utf8');

/** The first ```js block of the README's "Quick start" section, exactly as written. */
function quickStartWorker(): string {
  const section = readme.split(/^## /m).find((part) => part.startsWith('Quick start\n')) ?? '';
  const block = /```js\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('packages/worker-kit/README.md has no ```js block under "Quick start"');
  return block[1];
}

const versionOf = (name: string) => (JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) {
  const result = spawnSync(command, args, { cwd, env: { ...process.env, ...env }, encoding: 'utf8' });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

let scratch = '';
let tarball = '';
let packedFiles: string[] = [];
const dbName = `worker_kit_pkg_${randomBytes(6).toString('hex')}`;
let dbUrl = '';
let db: pg.Pool;
let worker: ChildProcess | undefined;
let workerOut = '';
let base = '';

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'worker-kit-standalone-'));
  // npm pack runs the package's prepack (its build) and reports the tarball as JSON on stdout after the build's output.
  const packed = run('npm', ['pack', '--json', '--pack-destination', scratch], kitRoot);
  expect(packed.status, packed.stderr).toBe(0);
  const report = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('[\n'))) as { filename: string; files: { path: string }[] }[];
  tarball = join(scratch, report[0].filename);
  packedFiles = report[0].files.map((file) => file.path);

  const app = join(scratch, 'app');
  run('mkdir', ['-p', app], scratch);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'greeter-worker', private: true, type: 'module' }));
  // The versions the repository already installed, so the npm cache answers without the network.
  const installed = run(
    'npm',
    ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball, `@hono/node-server@${versionOf('@hono/node-server')}`, `pg@${versionOf('pg')}`],
    app,
  );
  expect(installed.status, installed.stderr).toBe(0);

  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  await admin.end();
  const url = new URL(ADMIN_URL);
  url.pathname = `/${dbName}`;
  dbUrl = url.toString();
  db = new pg.Pool({ connectionString: dbUrl, max: 2 });
  // An idle connection's backend can end under it: the drop below terminates any the pool's end()
  // has not closed yet (seen once in CI as an uncaught "terminating connection due to administrator
  // command"). pg-pool re-emits that on the pool, which throws when nothing listens; a query that
  // meets a dead connection still fails the test.
  db.on('error', () => undefined);
});

afterAll(async () => {
  if (worker && worker.exitCode === null) {
    worker.kill('SIGTERM');
    await once(worker, 'exit');
  }
  await db?.end();
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const app = () => join(scratch, 'app');
const rowsFor = async (key: string) =>
  Number((await db.query<{ n: number }>('SELECT count(*)::int AS n FROM sent_greetings WHERE idempotency_key = $1', [key])).rows[0].n);

function deliver(key: string, input: unknown) {
  return fetch(`${base}/transition`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key, 'x-transition-step': 'greet', 'x-pipeline': 'greetings' },
    body: JSON.stringify(input),
  });
}

describe('the worker kit as a package of its own', () => {
  it('packs its build, proto and README, and no source of the orchestrator', () => {
    expect(packedFiles).toEqual(
      expect.arrayContaining(['package.json', 'README.md', 'dist/index.js', 'dist/index.d.ts', 'dist/migrate-cli.js', 'proto/transition_worker.proto']),
    );
    expect(packedFiles.filter((path) => !path.startsWith('dist/') && !['package.json', 'README.md', 'proto/transition_worker.proto'].includes(path))).toEqual(
      [],
    );
  });

  it('installs from the tarball alone: a real directory, without the orchestrator', () => {
    const installed = join(app(), 'node_modules', '@pipeline-orchestrator', 'worker-kit');
    expect(lstatSync(installed).isSymbolicLink()).toBe(false);
    expect(existsSync(join(installed, 'dist', 'index.js'))).toBe(true);
    expect(existsSync(join(app(), 'node_modules', 'pipeline-orchestrator'))).toBe(false);
    expect(existsSync(join(app(), 'node_modules', '@temporalio'))).toBe(false);
  });

  it('types a TypeScript worker from its declarations alone (a wrong option fails tsc)', () => {
    writeFileSync(
      join(app(), 'consumer.ts'),
      [
        "import { createRestTransitionWorker, ensureDedupeSchema, TransitionRejectedError, type Queryable, type TransitionCall } from '@pipeline-orchestrator/worker-kit';",
        'declare const db: Queryable;',
        'await ensureDedupeSchema(db);',
        'const worker = createRestTransitionWorker({',
        "  db, platform: 'greeter/1.0',",
        '  handler: async (input: unknown, call: TransitionCall) => {',
        "    if (input === null) throw new TransitionRejectedError('input is required', 422, 'INPUT_REQUIRED');",
        '    return { key: call.idempotencyKey, attempt: call.attempt };',
        '  },',
        '});',
        'export const fetchHandler: (request: Request) => Response | Promise<Response> = worker.fetch;',
        '// @ts-expect-error platform is a string',
        'createRestTransitionWorker({ db, platform: 1, handler: async () => null });',
        '',
      ].join('\n'),
    );
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const args = ['--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext'];
    // Node's own types from the repository (a worker project has @types/node of its own); everything else from the scratch install.
    const checked = run(process.execPath, [tsc, ...args, '--types', 'node', '--typeRoots', join(root, 'node_modules', '@types'), 'consumer.ts'], app());
    expect(checked.stdout + checked.stderr).toBe('');
    expect(checked.status).toBe(0);
  });

  it('runs its migration with npx worker-kit-migrate: refuses without DATABASE_URL, then applies, twice', async () => {
    const missing = run('npx', ['--no', 'worker-kit-migrate'], app(), { DATABASE_URL: '' });
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('DATABASE_URL');
    const wrong = run('npx', ['--no', 'worker-kit-migrate', 'prnt'], app(), { DATABASE_URL: dbUrl });
    expect(wrong.status).toBe(2);
    expect(wrong.stderr).toContain('unknown argument prnt');
    const printed = run('npx', ['--no', 'worker-kit-migrate', 'print'], app(), { DATABASE_URL: '' });
    expect(printed.status).toBe(0);
    expect(printed.stdout).toContain('CREATE TABLE IF NOT EXISTS transition_worker_dedupe');
    for (let i = 0; i < 2; i++) {
      const applied = run('npx', ['--no', 'worker-kit-migrate'], app(), { DATABASE_URL: dbUrl });
      expect(applied.status, applied.stderr).toBe(0);
      expect(JSON.parse(applied.stdout.trim())).toMatchObject({ event: 'worker_kit_migration_applied', table: 'transition_worker_dedupe' });
    }
    const columns = await db.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'transition_worker_dedupe' ORDER BY column_name`,
    );
    expect(columns.rows.map((row) => row.column_name)).toEqual(expect.arrayContaining(['idempotency_key', 'tenant_id', 'state', 'fence', 'lease_until']));
  });

  it("runs the README's quick-start worker as written: one effect per key, replays, rejections, the lookup", async () => {
    writeFileSync(join(app(), 'worker.mjs'), quickStartWorker());
    worker = spawn(process.execPath, ['worker.mjs'], {
      cwd: app(),
      env: { ...process.env, DATABASE_URL: dbUrl, PORT: '0' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    worker.stdout!.on('data', (chunk) => (workerOut += chunk));
    await until(
      () => {
        if (worker!.exitCode !== null || worker!.signalCode !== null)
          throw new Error(`worker.mjs exited with ${worker!.exitCode ?? worker!.signalCode}: ${workerOut}`);
        return /"event":"worker_ready","port":\d+/.test(workerOut);
      },
      60_000,
      'the quick-start worker to listen',
    );
    base = `http://127.0.0.1:${/"port":(\d+)/.exec(workerOut)![1]}`;

    // Delivered twice: the second answer is the stored one.
    const first = await deliver('acme/g-1:1:1', { name: 'ada' });
    expect(first.status).toBe(200);
    expect(first.headers.get('x-transition-worker-platform')).toBe('greeter/1.0');
    expect(await first.json()).toEqual({ greeting: 'hello ada' });
    const again = await deliver('acme/g-1:1:1', { name: 'ada' });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.json()).toEqual({ greeting: 'hello ada' });
    expect(await rowsFor('acme/g-1:1:1')).toBe(1);

    // Another tenant that chose the same executionId is another transition.
    expect((await deliver('globex/g-1:1:1', { name: 'bob' })).status).toBe(200);
    expect(await rowsFor('globex/g-1:1:1')).toBe(1);

    // Five copies at once: one effect, every answer the stored one or "in progress".
    const answers = await Promise.all(Array.from({ length: 5 }, () => deliver('acme/g-2:1:1', { name: 'cy' })));
    for (const answer of answers) {
      expect([200, 425]).toContain(answer.status);
      if (answer.status === 200) expect(await answer.json()).toEqual({ greeting: 'hello cy' });
      else expect(answer.headers.get('x-transition-in-progress')).toBe('true');
    }
    expect(answers.some((answer) => answer.status === 200)).toBe(true);
    expect(await rowsFor('acme/g-2:1:1')).toBe(1);

    // A rejection: the contract's problem, non-retryable, stored and replayed, no effect.
    for (let i = 0; i < 2; i++) {
      const rejected = await deliver('acme/g-3:1:1', {});
      expect(rejected.status).toBe(422);
      expect(rejected.headers.get('content-type')).toBe('application/problem+json');
      expect(await rejected.json()).toMatchObject({ code: 'NAME_REQUIRED', detail: 'name is required', retryable: false });
    }
    expect(await rowsFor('acme/g-3:1:1')).toBe(0);

    // The disposition lookup.
    const recorded = await fetch(`${base}/transition/${encodeURIComponent('acme/g-1:1:1')}`);
    expect(await recorded.json()).toMatchObject({ recorded: true, state: 'DONE', legacy: false });
    const unknown = await fetch(`${base}/transition/${encodeURIComponent('acme/g-9:1:1')}`);
    expect(await unknown.json()).toMatchObject({ recorded: false, state: null });

    // A key that is not one is refused without running the handler.
    expect((await deliver('not-a-key', { name: 'dee' })).status).toBe(400);
    expect(Number((await db.query<{ n: number }>('SELECT count(*)::int AS n FROM sent_greetings')).rows[0].n)).toBe(3);
  });
});
