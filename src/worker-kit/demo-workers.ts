/**
 * The demo pipeline's remote steps, served by the worker kit in the service process:
 * `notify` over REST and `archive` over gRPC. Their behaviour (fail, stall) comes from
 * the demo input, as for the local steps.
 */
import type { ServerType } from '@hono/node-server';
import { serveHttp } from '../net';
import { ConfigError } from '../errors';
import { demoBehaviour } from '../pipeline/demo';
import { NonRetryableException } from '../pipeline/define';
import type { Queryable } from '../store/db';
import type { Log } from '../log';
import { ensureDedupeSchema } from './dedupe-store';
import { TransitionRejectedError } from './delivery';
import { createGrpcTransitionWorker } from './grpc-worker';
import { createRestTransitionWorker, type TransitionCall } from './rest-worker';

function handlerFor(step: string) {
  return async (input: unknown, call: TransitionCall) => {
    try {
      return await demoBehaviour(input, { name: step, attempt: call.attempt, remote: true });
    } catch (err) {
      if (err instanceof NonRetryableException) throw new TransitionRejectedError(err.message, 422);
      throw err;
    }
  };
}

export async function startDemoWorkers(db: Queryable, ports: { rest: number; grpc: number }, log?: Log): Promise<{ stop(): Promise<void> }> {
  await ensureDedupeSchema(db);
  const platform = `demo-kit/node-${process.versions.node}`;
  const rest = createRestTransitionWorker({ db, platform, log, handler: handlerFor('notify') });
  const server: ServerType = await serveHttp({ fetch: rest.fetch, port: ports.rest, hostname: '127.0.0.1', key: 'pipeline.demo.rest-port' });
  const grpc = createGrpcTransitionWorker({ db, platform, log, handler: handlerFor('archive') });
  try {
    await grpc.listen(ports.grpc);
  } catch (err) {
    await new Promise((resolve) => server.close(resolve));
    throw new ConfigError(`pipeline.demo.grpc-port: cannot listen on 127.0.0.1:${ports.grpc} (${err instanceof Error ? err.message : err})`);
  }
  return {
    async stop() {
      await new Promise((resolve) => server.close(resolve));
      await grpc.stop();
    },
  };
}
