// The production build: the service (src/main.ts) and the operator CLI (src/cli/main.ts), each
// bundled by esbuild into one ES module under dist/ (`npm run build`). Packages stay imports of
// node_modules; only the project's own TypeScript is compiled in. Both outputs sit one level
// under the package root, as src/paths.ts expects. The type check is `npm run check`'s (tsc).
// The worker kit's workspace package (packages/worker-kit) is built first, to its own dist/, and
// stays an import of `@pipeline-orchestrator/worker-kit`: the service runs the kit as a worker
// team installs it (its proto read from the package's own proto/).
import { spawnSync } from 'node:child_process';
import { build } from 'esbuild';

const outdir = process.argv[2] ?? 'dist';
const started = Date.now();
const kit = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'packages/worker-kit/tsconfig.build.json'], { stdio: 'inherit' });
if (kit.status !== 0) {
  process.stderr.write(`${JSON.stringify({ event: 'build_failed', package: '@pipeline-orchestrator/worker-kit', exitCode: kit.status })}\n`);
  process.exit(1);
}
await build({
  entryPoints: { main: 'src/main.ts', cli: 'src/cli/main.ts' },
  outdir,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node22',
  packages: 'external',
  // tsconfig.json maps the kit to its sources for tsc and tsx; the build keeps it a package import.
  external: ['@pipeline-orchestrator/worker-kit'],
  sourcemap: true,
  logLevel: 'warning',
});
process.stdout.write(`${JSON.stringify({ event: 'build_written', outdir, ms: Date.now() - started })}\n`);
