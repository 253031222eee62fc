/**
 * Where Temporal's time-skipping test server binary is: `TEMPORAL_TEST_SERVER_PATH`, else
 * `.tools/temporal-test-server/bin/temporal-test-server` under the current directory or this
 * package, else the SDK's own download (which needs the internet).
 */
import { accessSync, constants } from 'node:fs';
import { resolve } from 'node:path';
import { packagePath } from '../paths';

const BINARY = ['.tools', 'temporal-test-server', 'bin', 'temporal-test-server'];

export function testServerExecutable(env: NodeJS.ProcessEnv = process.env): { type: 'existing-path'; path: string } | { type: 'cached-download' } {
  if (env.TEMPORAL_TEST_SERVER_PATH) {
    try {
      accessSync(env.TEMPORAL_TEST_SERVER_PATH, constants.X_OK);
    } catch {
      throw new Error(`TEMPORAL_TEST_SERVER_PATH=${env.TEMPORAL_TEST_SERVER_PATH} is not an executable file`);
    }
    return { type: 'existing-path', path: env.TEMPORAL_TEST_SERVER_PATH };
  }
  for (const path of [resolve(process.cwd(), ...BINARY), packagePath(...BINARY)]) {
    try {
      accessSync(path, constants.X_OK);
      return { type: 'existing-path', path };
    } catch {
      // not here: try the next place
    }
  }
  return { type: 'cached-download' };
}
