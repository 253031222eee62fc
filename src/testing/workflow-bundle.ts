/**
 * The workflows' bundle for test engines, built once per source state and kept in the
 * temporary directory: bundling takes tens of seconds on a busy machine, so every engine
 * after the first in a suite (and every later run) starts without it.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packagePath } from '../paths';
import { WORKFLOWS_PATH, writeWorkflowBundle } from '../temporal/worker';

/** What the bundle is built from: this checkout's sources, or an installed package's built workflow code. */
const bundleSources = () => (WORKFLOWS_PATH.endsWith('.ts') ? sources(packagePath('src')) : [WORKFLOWS_PATH]);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => (entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : []))
    .sort();
}

/** The path of a bundle of this source tree's workflows, built now if no earlier engine built it. */
export async function cachedWorkflowBundle(): Promise<string> {
  const hash = createHash('sha256');
  for (const file of bundleSources()) hash.update(file).update(readFileSync(file));
  const path = join(tmpdir(), 'pipeline-orchestrator-workflows', `${hash.digest('hex').slice(0, 16)}.js`);
  if (existsSync(path)) return path;
  // Written beside and renamed into place: a parallel test file never reads half a bundle.
  const partial = `${path}.${process.pid}.partial`;
  await writeWorkflowBundle(partial);
  renameSync(partial, path);
  return path;
}
