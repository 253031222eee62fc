/**
 * The transition-worker kit for gRPC: a TransitionWorker server around a handler, with
 * the same Postgres dedupe by tenant-qualified idempotency key as the REST kit (one handler run per
 * identity, stored answers replayed, concurrent copies wait). Rejections become
 * FAILED_PRECONDITION (non-retryable), retryable failures UNAVAILABLE.
 */
import * as grpc from '@grpc/grpc-js';
import { DedupeStore } from './dedupe-store.js';
import { Deliveries } from './delivery.js';
import { TransitionWorkerService } from './grpc-service.js';
import type { Queryable } from './ports.js';
import { IN_PROGRESS_HEADER, parseIdempotencyKey, PLATFORM_HEADER, PROBLEM_CODE_METADATA, PROBLEM_METADATA, PROBLEM_RETRYABLE_METADATA } from './protocol.js';
import { deliveryLimits, transitionCallOf, type KitDeliveryOptions, type TransitionCall } from './rest-worker.js';
import { withRemoteParent } from './trace-context.js';

export interface GrpcTransitionWorkerOptions extends KitDeliveryOptions {
  db: Queryable;
  platform: string;
  handler: (input: unknown, call: TransitionCall) => Promise<unknown>;
}

export interface GrpcTransitionWorker {
  server: grpc.Server;
  /** binds 127.0.0.1:port (0 = any free port) and returns the address */
  listen(port?: number, host?: string): Promise<string>;
  stop(): Promise<void>;
}

export function createGrpcTransitionWorker(options: GrpcTransitionWorkerOptions): GrpcTransitionWorker {
  if (!options.platform) throw new TypeError('createGrpcTransitionWorker: platform is required');
  const store = new DedupeStore(options.db);
  const deliveries = new Deliveries(store, deliveryLimits(options), options.log);
  const server = new grpc.Server();
  const platformMetadata = () => {
    const md = new grpc.Metadata();
    md.set(PLATFORM_HEADER, options.platform);
    return md;
  };
  const fail = (code: grpc.status, details: string): Partial<grpc.StatusObject> => ({ code, details, metadata: platformMetadata() });

  server.addService(TransitionWorkerService, {
    async Invoke(call: grpc.ServerUnaryCall<{ input_json: string }, unknown>, callback: grpc.sendUnaryData<unknown>) {
      call.sendMetadata(platformMetadata());
      const first = (name: string) => (call.metadata.get(name)[0] as string | undefined) ?? null;
      const transition = transitionCallOf(first);
      if (!transition)
        return callback(
          fail(grpc.status.INVALID_ARGUMENT, 'idempotency-key must be a tenant-qualified transition identity {tenantId}/{executionId}:{stepIndex}:{attempt}'),
        );
      let input: unknown;
      try {
        input = JSON.parse(call.request.input_json || 'null');
      } catch {
        return callback(fail(grpc.status.INVALID_ARGUMENT, 'input_json is not JSON'));
      }
      try {
        const handle = (signal: AbortSignal) =>
          withRemoteParent(
            'worker-kit gRPC handle',
            (name) => first(name) ?? undefined,
            { 'pipeline.transition_key': transition.transitionKey, 'pipeline.platform': options.platform },
            () => options.handler(input, { ...transition, signal }),
          );
        const outcome = await deliveries.deliver(transition.idempotencyKey, handle);
        if (outcome.kind === 'in-progress') {
          // Not a failure: the caller delivers the same identity again (the engine commits no new attempt).
          const inProgress = platformMetadata();
          inProgress.set(IN_PROGRESS_HEADER, 'true');
          return callback({
            code: grpc.status.UNAVAILABLE,
            details: 'the same transition is still being handled; deliver it again later',
            metadata: inProgress,
          });
        }
        if (outcome.kind === 'retry') {
          // The contract's retryable problem: nothing stored, the next delivery runs the handler again.
          const md = platformMetadata();
          md.set(PROBLEM_METADATA, 'true');
          md.set(PROBLEM_RETRYABLE_METADATA, 'true');
          if (outcome.problem?.code) md.set(PROBLEM_CODE_METADATA, outcome.problem.code);
          return callback({ code: grpc.status.UNAVAILABLE, details: outcome.problem?.detail ?? 'transition failed; retry', metadata: md });
        }
        if (outcome.stored.status >= 400) {
          // A stored rejection, answered as the contract's problem: its message is the detail, never retryable.
          const body = (outcome.stored.body ?? {}) as { error?: unknown; code?: unknown };
          const md = platformMetadata();
          md.set(PROBLEM_METADATA, 'true');
          md.set(PROBLEM_RETRYABLE_METADATA, 'false');
          if (typeof body.code === 'string') md.set(PROBLEM_CODE_METADATA, body.code);
          return callback({
            code: grpc.status.FAILED_PRECONDITION,
            details: typeof body.error === 'string' ? body.error : 'transition rejected',
            metadata: md,
          });
        }
        callback(null, { output_json: JSON.stringify(outcome.stored.body), platform: options.platform });
      } catch {
        callback(fail(grpc.status.UNAVAILABLE, 'worker store unavailable'));
      }
    },
    async Lookup(call: grpc.ServerUnaryCall<{ transition_key: string }, unknown>, callback: grpc.sendUnaryData<unknown>) {
      if (!parseIdempotencyKey(call.request.transition_key))
        return callback(fail(grpc.status.INVALID_ARGUMENT, 'transition_key must be a tenant-qualified transition identity'));
      try {
        const found = await store.lookup(call.request.transition_key);
        callback(null, { recorded: found !== null, state: found?.state ?? '', completed_at: found?.completedAt ?? '' });
      } catch {
        callback(fail(grpc.status.UNAVAILABLE, 'worker store unavailable'));
      }
    },
  });

  return {
    server,
    listen(port = 0, host = '127.0.0.1') {
      return new Promise((resolve, reject) =>
        server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(`${host}:${bound}`))),
      );
    },
    stop() {
      return new Promise((resolve) => server.tryShutdown(() => resolve()));
    },
  };
}
