/**
 * How the conformance checker calls a worker: as the service does (the same headers or
 * metadata, the same reading of the answer through the transports' own functions), plus
 * the liberties a probe needs (no key, a bad key, a traceparent, giving up early).
 */
import * as grpc from '@grpc/grpc-js';
import { classifyFailure, type StepFailure } from '../activities/step-failure';
import { errorMessage } from '../errors';
import { parseIdempotencyKey } from '../ids';
import { grpcClient, grpcFailure, grpcOutput } from '../transports/grpc';
import { askLookup, type LookupAnswer, type LookupTarget } from '../transports/lookup';
import { PLATFORM_HEADER, PROBLEM_MEDIA_TYPE, PROBLEM_METADATA, REQUEST_HEADERS, transitionHeaders } from '@pipeline-orchestrator/worker-kit/protocol';
import { interpretRestAnswer } from '../transports/rest';

export interface InvokeRequest {
  /** the Idempotency-Key to send; null sends none */
  key: string | null;
  input: unknown;
  /** sent as X-Transition-Deadline-Ms; the checker gives up after it */
  deadlineMs: number;
  traceparent?: string;
  tracestate?: string;
}

export type Answer =
  /** a success: what the step's output would be */
  | { kind: 'output'; status: string; value: unknown; platform: string | null }
  /** what the service would record: errorCode, retryable, in progress; `problem` says whether the worker sent one */
  | { kind: 'failure'; status: string; failure: StepFailure; problem: boolean; platform: string | null }
  /** the checker's deadline passed (the service would park the execution as REMOTE_OUTCOME_UNKNOWN) */
  | { kind: 'deadline' }
  | { kind: 'unreachable'; detail: string };

export interface WorkerClient {
  readonly target: string;
  readonly protocol: 'REST' | 'GRPC';
  readonly offersLookup: boolean;
  invoke(request: InvokeRequest): Promise<Answer>;
  /** null when the worker offers no lookup */
  lookup(key: string, timeoutMs: number): Promise<LookupAnswer> | null;
  close(): void;
}

/** The ids the service would send with `key`, read from it (a malformed key sends only itself). */
function headersFor(request: InvokeRequest): Record<string, string> {
  const parsed = request.key ? parseIdempotencyKey(request.key) : null;
  const base = parsed
    ? transitionHeaders(
        { ...parsed, idempotencyKey: request.key!, correlationId: 'conformance-check', stepName: 'conformance', pipeline: 'conformance' },
        request.deadlineMs,
      )
    : { ...(request.key ? { [REQUEST_HEADERS.idempotencyKey]: request.key } : {}), [REQUEST_HEADERS.deadlineMs]: String(request.deadlineMs) };
  return {
    ...base,
    ...(request.traceparent ? { traceparent: request.traceparent } : {}),
    ...(request.tracestate ? { tracestate: request.tracestate } : {}),
  };
}

export function restWorkerClient(url: string, dispositionUrl: string | null): WorkerClient {
  const lookupTarget: LookupTarget | null = dispositionUrl ? { protocol: 'REST', urlTemplate: dispositionUrl } : null;
  return {
    target: url,
    protocol: 'REST',
    offersLookup: lookupTarget !== null,
    async invoke(request) {
      let response: Response;
      let text: string;
      try {
        response = await fetch(url, {
          method: 'POST',
          signal: AbortSignal.timeout(request.deadlineMs),
          headers: { 'content-type': 'application/json', accept: 'application/json, application/problem+json', ...headersFor(request) },
          body: JSON.stringify(request.input),
        });
        text = await response.text();
      } catch (err) {
        if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) return { kind: 'deadline' };
        const cause = (err as { cause?: { code?: string } }).cause?.code;
        return { kind: 'unreachable', detail: cause ?? errorMessage(err) };
      }
      const platform = response.headers.get(PLATFORM_HEADER);
      const status = String(response.status);
      try {
        return { kind: 'output', status, value: interpretRestAnswer(url, response, text), platform };
      } catch (err) {
        const problem = (response.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase() === PROBLEM_MEDIA_TYPE;
        return { kind: 'failure', status, failure: classifyFailure(err), problem, platform };
      }
    },
    lookup: (key, timeoutMs) => (lookupTarget ? askLookup(lookupTarget, key, timeoutMs) : null),
    close() {},
  };
}

export function grpcWorkerClient(address: string, offersLookup: boolean): WorkerClient {
  const client = grpcClient(address);
  return {
    target: address,
    protocol: 'GRPC',
    offersLookup,
    invoke(request) {
      const metadata = new grpc.Metadata();
      for (const [key, value] of Object.entries(headersFor(request))) metadata.set(key, value);
      return new Promise<Answer>((resolve) => {
        let platform: string | null = null;
        const call = client.Invoke(
          { input_json: JSON.stringify(request.input) },
          metadata,
          { deadline: Date.now() + request.deadlineMs },
          (err: grpc.ServiceError | null, response: { output_json: string; platform: string }) => {
            if (err) {
              platform ??= (err.metadata?.get(PLATFORM_HEADER)[0] as string | undefined) ?? null;
              if (err.code === grpc.status.DEADLINE_EXCEEDED) return resolve({ kind: 'deadline' });
              if (err.code === grpc.status.UNAVAILABLE && !err.metadata?.get(PLATFORM_HEADER).length && /connect|No connection/i.test(err.details))
                return resolve({ kind: 'unreachable', detail: err.details });
              const status = grpc.status[err.code] ?? String(err.code);
              const problem = err.metadata?.get(PROBLEM_METADATA)[0] === 'true';
              return resolve({ kind: 'failure', status, failure: classifyFailure(grpcFailure(address, err, platform)), problem, platform });
            }
            const answered = response.platform || platform;
            try {
              resolve({ kind: 'output', status: 'OK', value: grpcOutput(address, response.output_json, answered), platform: answered });
            } catch (failure) {
              resolve({ kind: 'failure', status: 'OK', failure: classifyFailure(failure), problem: false, platform: answered });
            }
          },
        );
        call.on('metadata', (md: grpc.Metadata) => {
          platform = (md.get(PLATFORM_HEADER)[0] as string | undefined) ?? platform;
        });
      });
    },
    lookup: (key, timeoutMs) => (offersLookup ? askLookup({ protocol: 'GRPC', address }, key, timeoutMs) : null),
    close() {
      // grpcClient's channels are shared and cached for the process; the CLI exits when done.
    },
  };
}
