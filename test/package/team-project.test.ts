/**
 * A team adopts the product as a package, proven as the team would: the packed tarballs of both
 * packages installed into a copy of examples/team-project in a temporary directory (no workspace
 * link, nothing of this checkout on the path: the product's own packages only from their
 * tarballs), its `tsc` under nodenext, node16 and bundler, its tests (in memory and on the
 * engine), the service started from `node_modules` with its compiled pipelines, one execution
 * to SUCCEEDED read over HTTP; then the image's final stage reproduced in a directory (what the
 * Dockerfile copies, `npm ci --omit=dev`, the team's module added as the starter's Dockerfile adds
 * it) and the same execution there. No network: every install is `--offline`, from the npm cache
 * this checkout's own `npm ci` filled, through a lock written from this checkout's lock.
 */
import { execFileSync, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStubWorker, type StubWorker } from '../../src/testing';
import { cleanUpMainProcesses, startMainUp } from '../helpers/main-process';
import { scaled } from '../helpers/time-scale';

const ROOT = resolve(import.meta.dirname, '..', '..');
const work = mkdtempSync(join(tmpdir(), 'team-project-'));
const tarballs = join(work, 'tarballs');
const team = join(work, 'team');
const image = join(work, 'image');
let pricing: StubWorker;

interface LockEntry {
  version?: string;
  resolved?: string;
  integrity?: string;
  link?: boolean;
  dev?: boolean;
  optional?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  [key: string]: unknown;
}

/** Runs a command; a failure is thrown with its output (the test's message says what a team would read). */
function run(file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> {
  const result = spawnSync(file, args, { cwd, encoding: 'utf8', env: { ...process.env, ...env }, timeout: scaled(300_000) });
  if (result.status !== 0) throw new Error(`${file} ${args.join(' ')} (in ${cwd}) exited ${result.status}:\n${result.stdout}\n${result.stderr}`);
  return result;
}

/** `npm pack` of a package directory into `tarballs`; the tarball's path. */
function pack(dir: string): string {
  // prepack builds; `npm test`'s pretest has just built, so the build is not run a second time here.
  const out = run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', tarballs], dir);
  return join(tarballs, (JSON.parse(out.stdout) as { filename: string }[])[0].filename);
}

/**
 * The team's package-lock.json, written from this checkout's: every third-party package the
 * starter's dependencies reach, at the version and tarball (integrity) this checkout installed,
 * which the npm cache holds; the product's two packages from their tarballs.
 */
function teamLock(manifest: Record<string, Record<string, string>>, product: Record<string, string>): object {
  const checkout = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const entries: Record<string, LockEntry> = {};
  for (const [name, tarball] of Object.entries(product)) {
    const own = JSON.parse(execFileSync('tar', ['-xOzf', tarball, 'package/package.json'], { encoding: 'utf8' })) as LockEntry & { name: string };
    entries[`node_modules/${name}`] = {
      version: own.version,
      resolved: `file:${tarball}`,
      ...(own.dependencies ? { dependencies: own.dependencies } : {}),
      ...(own.bin ? { bin: own.bin } : {}),
      ...(own.engines ? { engines: own.engines } : {}),
      license: own.license,
    };
  }
  /** Node's resolution over the lock's hoisted paths: `name` as required from the package at `from`. */
  const locate = (name: string, from: string): string | undefined => {
    for (let base = from; ; base = base.slice(0, Math.max(0, base.lastIndexOf('/node_modules/')))) {
      const key = base ? `${base}/node_modules/${name}` : `node_modules/${name}`;
      if (checkout.packages[key] && !checkout.packages[key].link) return key;
      if (!base) return undefined;
    }
  };
  const pending: [string, string][] = [];
  const want = (deps: Record<string, string> | undefined, from: string, optional = false) => {
    for (const name of Object.keys(deps ?? {})) {
      if (name in product) continue;
      const key = locate(name, from);
      if (key) pending.push([key, key]);
      else if (!optional) throw new Error(`${name}, required by ${from || 'the starter'}, is not in this checkout's lock`);
    }
  };
  want({ ...manifest.dependencies, ...manifest.devDependencies }, '');
  for (const name of Object.keys(product)) want(entries[`node_modules/${name}`].dependencies, '');
  while (pending.length) {
    const [key] = pending.pop()!;
    if (entries[key]) continue;
    const entry = { ...checkout.packages[key] };
    delete entry.dev;
    delete entry.devOptional;
    entries[key] = entry;
    want(entry.dependencies, key);
    want(entry.optionalDependencies, key, true);
    const optionalPeers = entry.peerDependenciesMeta ?? {};
    want(Object.fromEntries(Object.entries(entry.peerDependencies ?? {}).filter(([name]) => !optionalPeers[name]?.optional)), key, true);
  }
  return {
    name: manifest.name,
    version: manifest.version,
    lockfileVersion: 3,
    requires: true,
    packages: {
      '': { name: manifest.name, version: manifest.version, dependencies: manifest.dependencies, devDependencies: manifest.devDependencies },
      ...entries,
    },
  };
}

/** Reads an execution's result from a running service's API, waiting for its end. */
async function executeOverHttp(http: number, dataDir: string, pipeline: string, executionId: string, input: unknown) {
  const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
  const call = (method: string, path: string, body?: unknown) =>
    fetch(`http://127.0.0.1:${http}/pipeline${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const submitted = await call('POST', '/api/tenants/acme/executions', { pipeline, executionId, input });
  expect(submitted.status, await submitted.clone().text()).toBe(202);
  let result: Response | undefined;
  // The long poll answers 409 while the execution has not ended after `wait`; ask again until it has.
  for (let asked = 0; asked < 10 && (result?.status ?? 409) === 409; asked++)
    result = await call('GET', `/api/tenants/acme/executions/${executionId}/result?wait=30s`);
  expect(result!.status).toBe(200);
  return (await result!.json()) as { status: string; output: unknown };
}

/** The service from `argv` in `cwd` on the embedded default with the team's module; the quote's result. */
async function quoteThroughService(argv: string[], cwd: string, modulePath: string) {
  const { child, env, ports } = await startMainUp(
    {
      PIPELINE_PIPELINES_MODULE: modulePath,
      PRICING_URL: pricing.url,
      // the embedded default's Temporal dev server: the CLI this checkout installed (a team has it on its PATH)
      TEMPORAL_CLI_PATH: join(ROOT, '.tools', 'pip', 'bin', 'temporal'),
    },
    { argv, cwd },
  );
  try {
    return await executeOverHttp(ports.http, env.PIPELINE_DATA_DIR, 'quotes', `q-${Date.now()}`, { sku: 'premium-9', quantity: 4 });
  } finally {
    child.kill('SIGINT');
    await once(child, 'exit');
  }
}

beforeAll(async () => {
  for (const built of ['dist/index.js', 'dist/types/index.d.ts', 'packages/worker-kit/dist/index.js'])
    if (!existsSync(join(ROOT, built))) throw new Error(`${built} is missing: run \`npm run build\` first (npm test's pretest does)`);
  mkdirSync(tarballs);
  const product = {
    '@pipeline-orchestrator/worker-kit': pack(join(ROOT, 'packages', 'worker-kit')),
    'pipeline-orchestrator': pack(ROOT),
  };
  cpSync(join(ROOT, 'examples', 'team-project'), team, { recursive: true, filter: (path) => !/\/(node_modules|dist|\.data)$/.test(path) });
  const manifest = JSON.parse(readFileSync(join(team, 'package.json'), 'utf8'));
  writeFileSync(join(team, 'package-lock.json'), JSON.stringify(teamLock(manifest, product), null, 2));
  run('npm', ['ci', '--offline', '--no-audit', '--no-fund'], team);
  pricing = await startStubWorker((input: { sku: string; quantity: number }) => ({ ...input, unitCents: input.sku.startsWith('PREMIUM') ? 2500 : 1000 }));
}, scaled(600_000));

afterAll(async () => {
  cleanUpMainProcesses();
  await pricing?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe('a team project on the installed packages', () => {
  it('installs the product from its tarballs, not from this checkout', () => {
    for (const name of ['pipeline-orchestrator', '@pipeline-orchestrator/worker-kit']) {
      const installed = join(team, 'node_modules', name);
      expect(readFileSync(join(installed, 'package.json'), 'utf8')).toContain('"version": "0.1.0"');
      // a directory of its own, never a link to the workspace
      expect(execFileSync('realpath', [installed], { encoding: 'utf8' }).trim()).toBe(installed);
    }
    expect(existsSync(join(team, 'node_modules', 'pipeline-orchestrator', 'src', 'index.ts'))).toBe(false);
  });

  it.each([
    ['nodenext', 'nodenext'],
    ['node16', 'node16'],
    ['bundler', 'esnext'],
  ])('type-checks under moduleResolution %s', (resolution, module) => {
    run(join(team, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.json', '--moduleResolution', resolution, '--module', module], team);
  });

  it("type-checks the packages' own declarations too (skipLibCheck off): no error in a file of the product", () => {
    const check = spawnSync(join(team, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.json', '--skipLibCheck', 'false'], { cwd: team, encoding: 'utf8' });
    const ours = check.stdout.split('\n').filter((line) => /^node_modules\/(pipeline-orchestrator|@pipeline-orchestrator)\//.test(line));
    expect(ours).toEqual([]);
  });

  it("runs the starter's tests: in memory and on the engine", () => {
    const test = run(join(team, 'node_modules', '.bin', 'vitest'), ['run'], team, {
      TEMPORAL_TEST_SERVER_PATH: join(ROOT, '.tools', 'temporal-test-server', 'bin', 'temporal-test-server'),
      NO_COLOR: '1',
      FORCE_COLOR: '0',
    });
    expect(test.stdout).toMatch(/Tests\s+5 passed \(5\)/);
  });

  it("runs the service from node_modules with the team's compiled pipelines: a quote SUCCEEDED, read over HTTP", async () => {
    run('npm', ['run', 'build'], team);
    const result = await quoteThroughService(
      [process.execPath, join(team, 'node_modules', '.bin', 'pipeline-orchestrator'), 'start'],
      team,
      join(team, 'dist', 'pipelines.js'),
    );
    expect(result).toMatchObject({ status: 'SUCCEEDED', output: { sku: 'PREMIUM-9', totalCents: 10_000 } });
  });

  it("runs the same execution in the image's final stage, reproduced in a directory, with the team's module added as its Dockerfile adds it", async () => {
    // The product's Dockerfile, final stage: its COPY lines, `npm ci --omit=dev`, its RUN ln.
    mkdirSync(join(image, 'packages', 'worker-kit'), { recursive: true });
    for (const file of ['package.json', 'package-lock.json', 'packages/worker-kit/package.json']) cpSync(join(ROOT, file), join(image, file));
    run('npm', ['ci', '--omit=dev', '--offline', '--no-audit', '--no-fund'], image);
    for (const dir of ['dist', 'packages/worker-kit/dist', 'packages/worker-kit/proto', 'bin', 'src/store/migrations'])
      cpSync(join(ROOT, dir), join(image, dir), { recursive: true, filter: (path) => !path.endsWith('.tsbuildinfo') });
    symlinkSync('..', join(image, 'node_modules', 'pipeline-orchestrator'));
    expect(existsSync(join(image, 'node_modules', 'tsx'))).toBe(false);
    // The starter's Dockerfile: its package.json and compiled dist/ under /app/pipelines, nothing of its node_modules.
    const dockerfile = readFileSync(join(team, 'Dockerfile'), 'utf8');
    expect(dockerfile).toContain('COPY --from=build /team/package.json /app/pipelines/package.json');
    expect(dockerfile).toContain('COPY --from=build /team/dist /app/pipelines/dist');
    mkdirSync(join(image, 'pipelines'));
    cpSync(join(team, 'package.json'), join(image, 'pipelines', 'package.json'));
    cpSync(join(team, 'dist'), join(image, 'pipelines', 'dist'), { recursive: true });
    // The image's CMD.
    const cmd = /^CMD \[(.*)\]$/m.exec(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'))![1];
    const argv = JSON.parse(`[${cmd}]`) as string[];
    expect(argv[0]).toBe('node');
    const result = await quoteThroughService([process.execPath, ...argv.slice(1)], image, join(image, 'pipelines', 'dist', 'pipelines.js'));
    expect(result).toMatchObject({ status: 'SUCCEEDED', output: { sku: 'PREMIUM-9', totalCents: 10_000 } });
  });
});
