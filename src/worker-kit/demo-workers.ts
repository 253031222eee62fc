/**
 * The demo pipeline's remote steps, served by the worker kit in the service process:
 * `notify` over REST and `archive` over gRPC. Their behaviour (fail, stall) comes from
 * the demo input, as for the local steps.
 */
import { serve, type ServerType } from '@hono/node-server';
import { demoBehaviour } from '../pipeline/demo';
import { NonRetryableException } from '../pipeline/define';
import type { Queryable } from '../store/db';
import { ensureDedupeSchema } from './dedupe-store';
import { TransitionRejected } from './delivery';
import { createGrpcTransitionWorker } from './grpc-worker';
import { createRestTransitionWorker, type TransitionCall } from './rest-worker';

function handlerFor(step: string) {
  return async (input: unknown, call: TransitionCall) => {
    try {
      return await demoBehaviour(input, { name: step, attempt: call.attempt, remote: true });
    } catch (err) {
      if (err instanceof NonRetryableException) throw new TransitionRejected(err.message, 422);
      throw err;
    }
  };
}

export async function startDemoWorkers(db: Queryable, ports: { rest: number; grpc: number }): Promise<{ stop(): Promise<void> }> {
  await ensureDedupeSchema(db);
  const platform = `demo-kit/node-${process.versions.node}`;
  const rest = createRestTransitionWorker({ db, platform, handler: handlerFor('notify') });
  const server: ServerType = serve({ fetch: rest.fetch, port: ports.rest, hostname: '127.0.0.1' });
  const grpc = createGrpcTransitionWorker({ db, platform, handler: handlerFor('archive') });
  await grpc.listen(ports.grpc);
  return {
    async stop() {
      await new Promise((resolve) => server.close(resolve));
      await grpc.stop();
    },
  };
}
