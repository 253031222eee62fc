/**
 * One Temporal dev server for the whole test run (the real CLI binary, never a mock),
 * with the service's search attributes registered. Files read its address with
 * `inject('temporalAddress')`.
 */
import type { TestProject } from 'vitest/node';
import { startDevServer, type DevServer } from '../src/temporal/dev-server';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
  }
}

let server: DevServer | undefined;

export async function setup(project: TestProject) {
  server = await startDevServer();
  project.provide('temporalAddress', server.address);
}

export async function teardown() {
  await server?.stop();
}
