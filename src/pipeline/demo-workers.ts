/**
 * The demo pipeline's remote steps, served by the worker kit in the service process:
 * `notify` over REST and `archive` over gRPC. Their behaviour (fail, stall) comes from
 * the demo input, as for the local steps.
 *
 * They listen before the service starts (the pipeline names their addresses, and a port 0
 * is only known once bound), and use the service's database once it is open: a call that
 * arrives before waits for it.
 */
import type { ServerType } from '@hono/node-server';
import {
  createGrpcTransitionWorker,
  createRestTransitionWorker,
  ensureDedupeSchema,
  TransitionRejectedError,
  type TransitionCall,
} from '@pipeline-orchestrator/worker-kit';
import { boundPort, portInUse, portTakenMessage, serveHttp } from '../net';
import { ConfigError } from '../errors';
import { demoBehaviour } from './demo';
import { NonRetryableException } from './define';
import { deferredQueryable, type Queryable } from '../store/db';
import type { Log } from '../log';

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

export interface DemoWorkers {
  /** the ports they listen on (for a configured 0, the ones they got) */
  ports: { rest: number; grpc: number };
  /** Gives them the service's database (creates the kit's dedupe table). */
  attach(db: Queryable): Promise<void>;
  stop(): Promise<void>;
}

export async function startDemoWorkers(ports: { rest: number; grpc: number }, log?: Log): Promise<DemoWorkers> {
  const { db, open } = deferredQueryable();
  const platform = `demo-kit/node-${process.versions.node}`;
  const rest = createRestTransitionWorker({ db, platform, log, handler: handlerFor('notify') });
  const server: ServerType = await serveHttp({ fetch: rest.fetch, port: ports.rest, hostname: '127.0.0.1', key: 'pipeline.demo.rest-port' });
  const grpc = createGrpcTransitionWorker({ db, platform, log, handler: handlerFor('archive') });
  let grpcAddress: string;
  try {
    grpcAddress = await grpc.listen(ports.grpc);
  } catch (err) {
    await new Promise((resolve) => server.close(resolve));
    const key = 'pipeline.demo.grpc-port';
    throw new ConfigError(
      ports.grpc !== 0 && (await portInUse(ports.grpc))
        ? portTakenMessage({ key, port: ports.grpc })
        : `${key}: cannot listen on 127.0.0.1:${ports.grpc} (${err instanceof Error ? err.message : err})`,
    );
  }
  return {
    ports: { rest: boundPort(server), grpc: Number(grpcAddress.split(':').at(-1)) },
    async attach(serviceDb) {
      await ensureDedupeSchema(serviceDb);
      open(serviceDb);
    },
    async stop() {
      await new Promise((resolve) => server.close(resolve));
      await grpc.stop();
    },
  };
}
