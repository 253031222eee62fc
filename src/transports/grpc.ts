/**
 * The gRPC transport: TransitionWorker.Invoke with the segment input as JSON and the
 * tenant-qualified transition identity in the `idempotency-key` metadata, beside the ids,
 * attempt, step and deadline (transitionHeaders). The deadline is
 * pipeline.orchestrator.worker.grpc.request-timeout (or the step's own): at 75% one
 * warning is logged, and DEADLINE_EXCEEDED (or our own clock) parks the execution as
 * REMOTE_OUTCOME_UNKNOWN. UNAVAILABLE and RESOURCE_EXHAUSTED are retryable; any other
 * status is non_retryable with errorCode GRPC_<STATUS>, unless the worker marked its
 * error as a problem (`x-transition-problem*` metadata) with its own code, detail and
 * retryability.
 */
import * as grpc from '@grpc/grpc-js';
import { PLATFORM_HEADER } from '@pipeline-orchestrator/worker-kit/protocol';
import { TransitionWorkerClient } from './grpc-proto';
import {
  DeliveryUnconfirmedError,
  IN_PROGRESS_HEADER,
  RemoteFailureError,
  RemoteOutcomeUnknownError,
  TransitionInProgressError,
  transitionHeaders,
  withDeadline,
  WorkerUnreachableError,
  type RemoteCallContext,
} from './remote';
import { grpcProblem } from './worker-problem';
import { injectTraceContext } from '../trace-context';

const RECONNECT = { 'grpc.initial_reconnect_backoff_ms': 250, 'grpc.max_reconnect_backoff_ms': 2000 };
const clients = new Map<string, grpc.Client & Record<string, any>>();

export function grpcClient(address: string): grpc.Client & Record<string, any> {
  let client = clients.get(address);
  if (!client) {
    // A worker that restarted is reached again within 2 s (grpc-js waits up to 120 s between reconnects by default,
    // failing every call meanwhile as if nothing listened).
    client = new TransitionWorkerClient(address, grpc.credentials.createInsecure(), RECONNECT) as grpc.Client & Record<string, any>;
    clients.set(address, client);
  }
  return client;
}

const RETRYABLE = new Set([grpc.status.UNAVAILABLE, grpc.status.RESOURCE_EXHAUSTED]);

/** Whether the server said anything (headers or trailers): an error without is the channel's own. */
function hasMetadata(err: grpc.ServiceError): boolean {
  return err.metadata !== undefined && Object.keys(err.metadata.getMap()).length > 0;
}

/**
 * What grpc-js reports, with no status or metadata from the server, when the connection went
 * away after the call was sent: the worker process died (UNAVAILABLE "Connection dropped") or
 * its server shut down mid-call (CANCELLED "Call cancelled", a cancel we did not make). The
 * worker may have taken the call. "No connection established" (nothing was sent) is not one.
 */
function droppedAfterSending(err: grpc.ServiceError): boolean {
  if (hasMetadata(err)) return false;
  if (err.code === grpc.status.UNAVAILABLE) return /^Connection dropped|ECONNRESET|EPIPE/.test(err.details ?? '');
  return err.code === grpc.status.CANCELLED && err.details === 'Call cancelled';
}

export async function callGrpc(address: string, input: unknown, deadlineMs: number, ctx: RemoteCallContext): Promise<unknown> {
  const metadata = new grpc.Metadata();
  try {
    for (const [key, value] of Object.entries(transitionHeaders(ctx, deadlineMs))) metadata.set(key, value);
  } catch {
    // Nothing was sent: a local encoding problem (a correlationId stored before it was validated), not the network.
    throw new RemoteFailureError(
      `the call to ${address} was not sent: a metadata value (correlationId) cannot be encoded in gRPC`,
      'INVALID_REQUEST_METADATA',
      false,
      null,
    );
  }
  injectTraceContext((key, value) => metadata.set(key, value));
  return withDeadline(
    'GRPC',
    address,
    deadlineMs,
    ctx,
    (signal) =>
      new Promise((resolve, reject) => {
        let platform: string | null = null;
        const startedAt = new Date();
        const call = grpcClient(address).Invoke(
          { input_json: JSON.stringify(input ?? null) },
          metadata,
          { deadline: Date.now() + deadlineMs },
          (err: grpc.ServiceError | null, response: { output_json: string; platform: string }) => {
            if (err) {
              platform ??= (err.metadata?.get(PLATFORM_HEADER)[0] as string | undefined) ?? null;
              if (err.code === grpc.status.DEADLINE_EXCEEDED) {
                reject(new RemoteOutcomeUnknownError('GRPC', address, Math.max(deadlineMs, Date.now() - startedAt.getTime()), deadlineMs, startedAt));
                return;
              }
              // Our own cancel (the deadline, the activity's cancellation) is withDeadline's to report.
              if (!signal.aborted && droppedAfterSending(err)) {
                reject(new DeliveryUnconfirmedError('GRPC', address, platform, `${grpc.status[err.code]}: ${err.details}`));
                return;
              }
              reject(grpcFailure(address, err, platform));
              return;
            }
            try {
              resolve(grpcOutput(address, response.output_json, response.platform || platform));
            } catch (failure) {
              reject(failure as Error);
            }
          },
        );
        call.on('metadata', (md: grpc.Metadata) => {
          platform = (md.get(PLATFORM_HEADER)[0] as string | undefined) ?? platform;
        });
        signal.addEventListener('abort', () => call.cancel(), { once: true });
      }),
  );
}

/** The step output of an OK answer: output_json parsed, empty → null, not JSON → INVALID_WORKER_RESPONSE. */
export function grpcOutput(address: string, outputJson: string, platform: string | null): unknown {
  try {
    return outputJson === '' ? null : JSON.parse(outputJson);
  } catch {
    throw new RemoteFailureError(`gRPC worker at ${address} answered output that is not JSON`, 'INVALID_WORKER_RESPONSE', false, platform);
  }
}

/**
 * What the service makes of a worker's gRPC error status other than DEADLINE_EXCEEDED (the
 * conformance checker asks the same): in progress, the worker's problem, or `GRPC_<STATUS>`.
 */
export function grpcFailure(address: string, err: grpc.ServiceError, platform: string | null): RemoteFailureError {
  if (err.metadata?.get(IN_PROGRESS_HEADER)[0] === 'true') return new TransitionInProgressError('GRPC', address, platform, null);
  const name = grpc.status[err.code] ?? String(err.code);
  // No word from a server (no metadata at all): the channel could not connect, nothing was sent.
  if (err.code === grpc.status.UNAVAILABLE && !hasMetadata(err))
    return new WorkerUnreachableError(`gRPC worker at ${address} unreachable (UNAVAILABLE: ${err.details})`, `GRPC_${name}`, 'GRPC', address);
  const problem = grpcProblem((key) => err.metadata?.get(key)[0] as string | undefined, err.details);
  return new RemoteFailureError(
    `gRPC worker at ${address} answered ${name}${problem?.detail ? `: ${problem.detail}` : ''}`,
    problem?.code ?? `GRPC_${name}`,
    problem?.retryable ?? RETRYABLE.has(err.code),
    platform,
  );
}

/** TransitionWorker.Lookup of the idempotency key the call was sent with, for disposition evidence. */
export function lookupGrpc(address: string, key: string, timeoutMs: number): Promise<{ recorded: boolean; state: string }> {
  return new Promise((resolve, reject) => {
    grpcClient(address).Lookup(
      { transition_key: key },
      new grpc.Metadata(),
      { deadline: Date.now() + timeoutMs },
      (err: grpc.ServiceError | null, res: { recorded: boolean; state: string }) => (err ? reject(err) : resolve(res)),
    );
  });
}
