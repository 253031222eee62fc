/**
 * Invokes a step's operator under the step's deadline, with heartbeats so a dead
 * worker's step is redelivered quickly. REST and gRPC transports plug in here.
 */
import type { Log } from '../log';
import type { StepContext, StepDefinition } from '../pipeline/define';
import { callGrpc } from '../transports/grpc';
import { callRest } from '../transports/rest';
import { StepTimeoutError } from './step-failure';

export interface Invocation {
  step: StepDefinition;
  input: unknown;
  context: Omit<StepContext, 'signal'>;
  timeoutMs: number;
  /** aborted when Temporal cancels the activity */
  cancellation?: AbortSignal;
  heartbeat?: () => void;
  heartbeatEveryMs?: number;
  log: Log;
  /** counts remote_transition_deadline_warning events */
  onDeadlineWarning?: (protocol: string) => void;
}

export async function invokeStep(invocation: Invocation): Promise<unknown> {
  const controller = new AbortController();
  const startedAt = Date.now();
  const onCancel = () => controller.abort(invocation.cancellation?.reason);
  invocation.cancellation?.addEventListener('abort', onCancel, { once: true });
  const beat = invocation.heartbeat && invocation.heartbeatEveryMs ? setInterval(invocation.heartbeat, invocation.heartbeatEveryMs) : undefined;
  let deadline: NodeJS.Timeout | undefined;
  // Remote transports keep their own caller deadline (outcome unknown, not a timeout).
  const remote = invocation.step.transport === 'REST' || invocation.step.transport === 'GRPC';
  const timedOut = new Promise<never>((_, reject) => {
    if (remote) return;
    deadline = setTimeout(() => {
      const error = new StepTimeoutError(invocation.timeoutMs);
      controller.abort(error);
      reject(error);
    }, invocation.timeoutMs);
  });
  try {
    const context: StepContext = { ...invocation.context, signal: controller.signal };
    return await Promise.race([callOperator(invocation.step, invocation.input, context, startedAt, invocation.timeoutMs, invocation), timedOut]);
  } finally {
    clearTimeout(deadline);
    if (beat) clearInterval(beat);
    invocation.cancellation?.removeEventListener('abort', onCancel);
  }
}

async function callOperator(
  step: StepDefinition,
  input: unknown,
  ctx: StepContext,
  startedAt: number,
  timeoutMs: number,
  invocation: Invocation,
): Promise<unknown> {
  const remote = { ...ctx, log: invocation.log, onDeadlineWarning: invocation.onDeadlineWarning };
  switch (step.transport) {
    case 'REST':
      return callRest(step.rest.url, input, timeoutMs, remote);
    case 'GRPC':
      return callGrpc(step.grpc.address, input, timeoutMs, remote);
    case 'LOCAL':
      return step.run(input, ctx);
    case 'FUNCTION':
      return step.handler(input, {
        functionName: ctx.stepName,
        invocationId: ctx.idempotencyKey,
        tenantId: ctx.tenantId,
        executionId: ctx.executionId,
        correlationId: ctx.correlationId,
        attempt: ctx.attempt,
        getRemainingTimeInMillis: () => Math.max(0, timeoutMs - (Date.now() - startedAt)),
        signal: ctx.signal,
        reject: ctx.reject,
      });
  }
}
