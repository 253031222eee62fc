/**
 * The `demo` pipeline shipped with the service: four steps that pass their input along
 * and append their name to `trail`. Its input can make any step fail, so every failure
 * path can be driven from the HTTP API alone:
 *
 * ```json
 * { "fail": { "charge": { "mode": "retryable", "times": 2 } }, "sleepMs": { "enrich": 500 } }
 * ```
 * - `fail.<step>.mode`: `retryable` (a plain Error) or `non_retryable` (NonRetryableException);
 * - `fail.<step>.times`: fail while the step's committed attempt is ≤ times (absent = always);
 * - `fail.<step>.code`: the errorCode (default DEMO_RETRYABLE / DEMO_NON_RETRYABLE);
 * - `sleepMs.<step>`: wait that long first (honours the abort signal).
 */
import { z } from 'zod';
import { definePipeline, functionStep, localStep, NonRetryableException, type StepContext } from './define';

const DemoInput = z.object({
  fail: z.record(z.string(), z.object({
    mode: z.enum(['retryable', 'non_retryable']),
    times: z.number().int().min(0).optional(),
    code: z.string().regex(/^[A-Z][A-Z0-9_]{0,63}$/).optional(),
  })).optional(),
  sleepMs: z.record(z.string(), z.number().int().min(0).max(600_000)).optional(),
  trail: z.array(z.string()).optional(),
}).passthrough();
type DemoInput = z.infer<typeof DemoInput>;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(timer); reject(signal.reason); }, { once: true });
  });
}

async function demoStep(raw: unknown, ctx: Pick<StepContext, 'stepName' | 'attempt' | 'signal'>) {
  const parsed = DemoInput.safeParse(raw ?? {});
  if (!parsed.success) throw new NonRetryableException(`demo input is invalid at ${parsed.error.issues[0]?.path.join('.') || '(root)'}`, 'DEMO_INPUT_INVALID');
  const input: DemoInput = parsed.data;
  const pause = input.sleepMs?.[ctx.stepName];
  if (pause) await sleep(pause, ctx.signal);
  const failure = input.fail?.[ctx.stepName];
  if (failure && (failure.times === undefined || ctx.attempt <= failure.times)) {
    const message = `demo ${failure.mode} failure of ${ctx.stepName} at attempt ${ctx.attempt}`;
    if (failure.mode === 'non_retryable') throw new NonRetryableException(message, failure.code ?? 'DEMO_NON_RETRYABLE');
    throw Object.assign(new Error(message), { code: failure.code ?? 'DEMO_RETRYABLE' });
  }
  return { ...input, trail: [...(input.trail ?? []), ctx.stepName] };
}

export const demoPipeline = definePipeline({
  name: 'demo',
  steps: [
    localStep('validate', demoStep),
    functionStep('enrich', (event, context) => demoStep(event, { stepName: context.functionName, attempt: context.attempt, signal: context.signal })),
    localStep('charge', demoStep, { command: true }),
    localStep('publish', demoStep),
  ],
});
