// The packages' build (`npm run build`, and `prepack` before `npm pack` / `npm publish`):
//
// 1. the worker kit (packages/worker-kit) by tsc to its own dist/ (its sources carry .js
//    extensions; JavaScript and .d.ts side by side);
// 2. the root package's JavaScript by esbuild under dist/: one ES module per entry (the
//    pipeline API `index`, `testing`, `server`, the service `main`, the operator CLI `cli`, the
//    `orchestrator` command and the checker `worker-check`), code shared between entries in
//    chunks beside them (splitting: one copy of each class, so `instanceof` holds across entries).
//    Packages stay imports of node_modules. Every output sits one level under the package root,
//    as src/paths.ts expects;
// 3. the workflows' code by esbuild to dist/workflow-code.js, alone (no chunk shared with the
//    service's code): the input Temporal's bundler reads at a worker's start where src/ is not
//    shipped (src/temporal/worker.ts);
// 4. the root package's declarations by tsc (tsconfig.build.json) to dist/types/, their relative
//    imports then given the `.js` extensions a team's node16/nodenext resolution needs (the sources
//    import without extensions under `moduleResolution: bundler`).
//
// Why esbuild and tsc both: docs/decisions.md ("Packages: esbuild for JavaScript, tsc for declarations").
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { build } from 'esbuild';

const outdir = process.argv[2] ?? 'dist';
const started = Date.now();

function tsc(project, what) {
  const run = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', project], { stdio: 'inherit' });
  if (run.status !== 0) {
    process.stderr.write(`${JSON.stringify({ event: 'build_failed', step: what, exitCode: run.status })}\n`);
    process.exit(1);
  }
}

tsc('packages/worker-kit/tsconfig.build.json', '@pipeline-orchestrator/worker-kit');

const common = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  // tsconfig.json maps the kit to its sources for tsc and tsx; the build keeps it a package import.
  external: ['@pipeline-orchestrator/worker-kit', '@pipeline-orchestrator/worker-kit/protocol'],
  sourcemap: true,
  logLevel: 'warning',
};
// Written over the last build in place, never removed first: a test packing dist/ while another
// builds (npm test runs them side by side) reads whole files, never an empty dist/.
const written = await build({
  ...common,
  metafile: true,
  entryPoints: {
    index: 'src/index.ts',
    testing: 'src/testing/index.ts',
    server: 'src/server.ts',
    main: 'src/main.ts',
    cli: 'src/cli/main.ts',
    orchestrator: 'src/orchestrator-cli.ts',
    'worker-check': 'src/worker-check/main.ts',
  },
  outdir,
  splitting: true,
  chunkNames: 'chunk-[hash]',
});
await build({ ...common, entryPoints: { 'workflow-code': 'src/workflows/index.ts' }, outdir });
// Chunks of earlier builds (their names are content hashes) would otherwise ship in the tarball.
const current = new Set(Object.keys(written.metafile.outputs).map((file) => resolve(file)));
for (const name of readdirSync(outdir)) if (/^chunk-.*\.js(\.map)?$/.test(name) && !current.has(resolve(outdir, name))) rmSync(join(outdir, name));

tsc('tsconfig.build.json', 'pipeline-orchestrator declarations');
const types = join(outdir, 'types');
if (resolve(types) !== resolve('dist/types')) throw new Error('tsconfig.build.json writes dist/types: build into dist');
for (const file of walk(types)) if (file.endsWith('.d.ts')) writeFileSync(file, withJsExtensions(file, readFileSync(file, 'utf8')));
process.stdout.write(`${JSON.stringify({ event: 'build_written', outdir, ms: Date.now() - started })}\n`);

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

/** Each relative import of a declaration file, as node16/nodenext resolve it: `./x` → `./x.js` or `./x/index.js`. */
function withJsExtensions(file, text) {
  return text.replace(/(from\s+|import\s*\(\s*|import\s+)(['"])(\.{1,2}\/[^'"]*)\2/g, (whole, lead, quote, spec) => {
    const base = resolve(dirname(file), spec);
    let target;
    if (/\.(js|json)$/.test(spec)) target = spec;
    else if (spec.endsWith('.ts')) target = `${spec.slice(0, -3)}.js`;
    else if (existsSync(`${base}.d.ts`)) target = `${spec}.js`;
    else if (existsSync(join(base, 'index.d.ts'))) target = `${spec}/index.js`;
    else throw new Error(`${file}: cannot resolve the declaration import ${spec}`);
    return `${lead}${quote}${target}${quote}`;
  });
}
