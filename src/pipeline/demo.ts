/**
 * The `demo` pipeline shipped with the service: six steps that pass their input along
 * and append their name to `trail`. Its input can make any step fail or stall, so every
 * failure path can be driven from the HTTP API alone:
 *
 * ```json
 * { "fail": { "charge": { "mode": "retryable", "times": 2 } }, "sleepMs": { "notify": 40000 } }
 * ```
 * - `fail.<step>.mode`: `retryable` (a plain Error; the remote workers answer 503 /
 *   UNAVAILABLE) or `non_retryable` (NonRetryableException; the remote workers answer
 *   422 / FAILED_PRECONDITION);
 * - `fail.<step>.times`: fail while the step's committed attempt is ≤ times (absent = always);
 * - `fail.<step>.code`: the errorCode of a LOCAL/FUNCTION failure (default DEMO_RETRYABLE / DEMO_NON_RETRYABLE);
 * - `sleepMs.<step>`: wait that long first, on the first attempt only for the remote steps
 *   (past the request timeout, 30 s by default, `notify` and `archive` end in
 *   REMOTE_OUTCOME_UNKNOWN).
 *
 * Steps: validate (LOCAL) → enrich (FUNCTION) → charge (LOCAL, Command) → notify (REST,
 * Command, served by the worker kit) → archive (GRPC, served by the worker kit) → publish (LOCAL).
 */
import { z } from 'zod';
import { definePipeline, functionStep, grpcStep, localStep, NonRetryableException, restStep } from './define';

const DemoInput = z
  .object({
    fail: z
      .record(
        z.string(),
        z.object({
          mode: z.enum(['retryable', 'non_retryable']),
          times: z.number().int().min(0).optional(),
          code: z
            .string()
            .regex(/^[A-Z][A-Z0-9_]{0,63}$/)
            .optional(),
        }),
      )
      .optional(),
    sleepMs: z.record(z.string(), z.number().int().min(0).max(600_000)).optional(),
    trail: z.array(z.string()).optional(),
  })
  .passthrough();
type DemoInput = z.infer<typeof DemoInput>;

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

const OWN_NAMES = new Set(['fail', 'sleepMs', 'trail', 'mode', 'times', 'code']);

/**
 * Where in the input an issue is, by position: the demo's own field names as they are,
 * any key the caller chose (a step name under `fail`/`sleepMs`, anything else) as `#n`,
 * its position in its object. The message lands in lastErrorMessage and the DLQ, which
 * carry no payload data.
 */
export function inputPosition(path: readonly PropertyKey[], raw: unknown): string {
  let node: unknown = raw;
  const parts = path.map((segment) => {
    const here = node as Record<string, unknown> | undefined;
    node = here?.[segment as string];
    if (typeof segment === 'number' || OWN_NAMES.has(String(segment))) return String(segment);
    return `#${here && typeof here === 'object' ? Object.keys(here).indexOf(String(segment)) : '?'}`;
  });
  return parts.join('.') || '(root)';
}

/** What every demo step does, local or remote: sleep and fail as the input asks, then pass the input along. */
export async function demoBehaviour(raw: unknown, step: { name: string; attempt: number; signal?: AbortSignal; remote?: boolean }) {
  const parsed = DemoInput.safeParse(raw ?? {});
  if (!parsed.success)
    throw new NonRetryableException(`demo input is invalid at ${inputPosition(parsed.error.issues[0]?.path ?? [], raw)}`, 'DEMO_INPUT_INVALID');
  const input: DemoInput = parsed.data;
  const pause = input.sleepMs?.[step.name];
  if (pause && (!step.remote || step.attempt === 1)) await sleep(pause, step.signal);
  const failure = input.fail?.[step.name];
  if (failure && (failure.times === undefined || step.attempt <= failure.times)) {
    const message = `demo ${failure.mode} failure of ${step.name} at attempt ${step.attempt}`;
    if (failure.mode === 'non_retryable') throw new NonRetryableException(message, failure.code ?? 'DEMO_NON_RETRYABLE');
    throw Object.assign(new Error(message), { code: failure.code ?? 'DEMO_RETRYABLE' });
  }
  return { ...input, trail: [...(input.trail ?? []), step.name] };
}

export interface DemoWorkerAddresses {
  /** base URL of the demo REST kit worker, e.g. http://127.0.0.1:8091 */
  restBase: string;
  /** host:port of the demo gRPC kit worker */
  grpcAddress: string;
}

export function createDemoPipeline(workers: DemoWorkerAddresses) {
  return definePipeline({
    name: 'demo',
    // Give the next shape (a step added, removed, renamed, moved) version 2, and keep this one registered beside it.
    version: 1,
    steps: [
      localStep('validate', (input, ctx) => demoBehaviour(input, { name: ctx.stepName, attempt: ctx.attempt, signal: ctx.signal })),
      functionStep('enrich', (event, context) => demoBehaviour(event, { name: context.functionName, attempt: context.attempt, signal: context.signal })),
      localStep('charge', (input, ctx) => demoBehaviour(input, { name: ctx.stepName, attempt: ctx.attempt, signal: ctx.signal }), { command: true }),
      restStep('notify', { url: `${workers.restBase}/transition`, dispositionUrl: `${workers.restBase}/transition/{idempotencyKey}` }, { command: true }),
      grpcStep('archive', { address: workers.grpcAddress, lookup: true }),
      localStep('publish', (input, ctx) => demoBehaviour(input, { name: ctx.stepName, attempt: ctx.attempt, signal: ctx.signal })),
    ],
  });
}
