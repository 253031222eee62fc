// The production build: the service (src/main.ts) and the operator CLI (src/cli/main.ts), each
// bundled by esbuild into one ES module under dist/ (`npm run build`). Packages stay imports of
// node_modules; only the project's own TypeScript is compiled in. Both outputs sit one level
// under the package root, as src/paths.ts expects. The type check is `npm run check`'s (tsc).
import { build } from 'esbuild';

const outdir = process.argv[2] ?? 'dist';
const started = Date.now();
await build({
  entryPoints: { main: 'src/main.ts', cli: 'src/cli/main.ts' },
  outdir,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node22',
  packages: 'external',
  sourcemap: true,
  logLevel: 'warning',
});
process.stdout.write(`${JSON.stringify({ event: 'build_written', outdir, ms: Date.now() - started })}\n`);
