/**
 * Files the service reads at run time (migrations, the gRPC proto, the workflow sources),
 * found from the package root. This module sits one level under the root (src/paths.ts),
 * and so do the built entry points it is bundled into (dist/main.js, dist/cli.js): `..`
 * from here is the package root either way.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PACKAGE_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** A path under the package root. */
export function packagePath(...parts: string[]): string {
  return join(PACKAGE_ROOT, ...parts);
}
