/**
 * A pipeline run in memory, for an author's unit tests: no Temporal, no Postgres, in
 * milliseconds. Each step goes through the engine's own code — `invokeStep` (deadline,
 * FUNCTION context), `toJsonOutput`, `classifyFailure` and `decideFailure` (retry or
 * terminal, and the delay), the pipeline's resolved retry policy — and the output reaches
 * the next step as JSON, as it does between activities. What it leaves out: the store's
 * commits, crash redelivery, re-drives, and the waits (a retry's delay is recorded, not
 * slept).
 */
import pino from 'pino';
import { invokeStep } from '../activities/invoke-step';
import { RejectBuffer, type PendingReject } from '../activities/rejects';
import { classifyFailure, decideFailure, nonRetryableErrorTypesOf, toJsonOutput } from '../activities/step-failure';
import { loadConfig, type ConfigInput } from '../config/config';
import { idempotencyKey, transitionKey as makeTransitionKey } from '../ids';
import type { InputOf, Operator, OutputOf, PipelineDefinition, StepContext, StepDefinition } from '../pipeline/define';
import { definePipeline } from '../pipeline/define';
import { PipelineRegistry } from '../pipeline/registry';
import type { EffectStatus, TerminalReason } from '../spec-words';
import { RemoteOutcomeUnknownError } from '../transports/remote';

export type { InputOf, OutputOf } from '../pipeline/define';

export interface MemoryRunOptions {
  /** default `test` */
  tenantId?: string;
  /** default `memory-1` */
  executionId?: string;
  correlationId?: string | null;
  /**
   * Stand-ins for REST and gRPC steps, by step name, called like a LOCAL operator
   * (`(input, ctx) => output`). To act as the worker's failure, throw a plain Error
   * (retryable), a NonRetryableException, or `workerFailure(...)`. A remote step without a
   * stand-in calls its real URL or address.
   */
  remote?: Record<string, Operator>;
  /**
   * Stand-ins for any step, LOCAL and FUNCTION too, by step name: the step's own code is
   * replaced by this operator (`(input, ctx) => output`) for this run, everything else runs
   * as declared. Throw `workerDeadline()` or `workerAnswerNotJson()` from a remote step's
   * stand-in for a deadline (REMOTE_OUTCOME_UNKNOWN) or an answer that is not JSON
   * (INVALID_WORKER_RESPONSE).
   */
  steps?: Record<string, Operator>;
  /** service configuration the plan is resolved with (`pipeline.defaults.retry-limit`, …) */
  config?: ConfigInput;
}

/** One attempt of one step, in order. */
export interface MemoryAttempt {
  step: string;
  stepIndex: number;
  attempt: number;
  transitionKey: string;
  idempotencyKey: string;
  outcome: 'succeeded' | 'retry' | 'failed' | 'in_progress' | 'outcome_unknown';
  errorCode?: string;
  errorMessage?: string;
  /** the delay the engine would wait before the next attempt (not waited here) */
  delayMs?: number;
}

export interface MemoryRun<Out = unknown> {
  status: 'SUCCEEDED' | 'FAILED' | 'REMOTE_OUTCOME_UNKNOWN';
  /** the final output, as JSON carried it (SUCCEEDED only) */
  output?: Out;
  /** the step that ended the execution (FAILED, REMOTE_OUTCOME_UNKNOWN) */
  failedStep?: string;
  terminalReason?: TerminalReason;
  errorCode?: string;
  errorMessage?: string;
  /** retries after the first attempt of the failed step, as the DLQ envelope counts them */
  retriesObserved?: number;
  attempts: MemoryAttempt[];
  /** the Item Reject Sink: rejects of the attempts that succeeded */
  rejects: (PendingReject & { step: string; transitionKey: string })[];
  /** the last Command effect status of each Command step that ran, by step name */
  effects: Record<string, EffectStatus>;
}

const silent = pino({ level: 'silent' });
const MAX_IN_PROGRESS = 100;

/**
 * Runs `pipeline` on `input` in this process, step after step, with the engine's retry
 * rules, and says how it ended. It never throws for a step's failure: read `status`.
 */
export async function runPipeline<P extends PipelineDefinition>(
  pipeline: P,
  input: InputOf<P>,
  options: MemoryRunOptions = {},
): Promise<MemoryRun<OutputOf<P>>> {
  const definition = definePipeline(pipeline);
  const names = new Set(definition.steps.map((step) => step.name));
  for (const [option, standIns] of [
    ['remote', options.remote],
    ['steps', options.steps],
  ] as const)
    for (const name of Object.keys(standIns ?? {}))
      if (!names.has(name))
        throw new TypeError(`runPipeline: ${option}.${name} stands in for no step of pipeline "${definition.name}" (its steps: ${[...names].join(', ')})`);
  const config = loadConfig({}, { 'pipeline.auth.tokens': [], ...options.config });
  const plan = new PipelineRegistry(config, [definition]).plan(definition);
  const tenantId = options.tenantId ?? 'test';
  const executionId = options.executionId ?? 'memory-1';
  const run: MemoryRun<OutputOf<P>> = { status: 'SUCCEEDED', attempts: [], rejects: [], effects: {} };
  let segment: unknown = JSON.parse(JSON.stringify(input ?? null));

  for (let stepIndex = 0; stepIndex < definition.steps.length; stepIndex++) {
    const declared = definition.steps[stepIndex];
    const remoteStub = declared.transport === 'REST' || declared.transport === 'GRPC' ? options.remote?.[declared.name] : undefined;
    const stub = options.steps?.[declared.name] ?? remoteStub;
    const step: StepDefinition = stub ? { ...declared, transport: 'LOCAL', run: stub } : declared;
    const { retry, timeoutMs } = plan[stepIndex];
    let attempt = 1;
    let inProgress = 0;
    for (;;) {
      const key = makeTransitionKey(executionId, stepIndex, attempt);
      const record = { step: declared.name, stepIndex, attempt, transitionKey: key, idempotencyKey: idempotencyKey(tenantId, key) };
      const rejects = new RejectBuffer(declared.name);
      try {
        const raw = await invokeStep({
          step,
          input: segment,
          timeoutMs,
          log: silent,
          context: {
            tenantId,
            executionId,
            correlationId: options.correlationId ?? null,
            pipeline: definition.name,
            stepIndex,
            stepName: declared.name,
            attempt,
            transitionKey: key,
            idempotencyKey: record.idempotencyKey,
            reject: rejects.reject,
          },
        });
        // What the next activity receives: the output as JSON, a Date as its string.
        segment = JSON.parse(JSON.stringify(toJsonOutput(raw)));
        run.attempts.push({ ...record, outcome: 'succeeded' });
        run.rejects.push(...rejects.pending.map((reject) => ({ ...reject, step: declared.name, transitionKey: key })));
        if (declared.command) run.effects[declared.name] = 'SUCCEEDED';
        break;
      } catch (err) {
        if (err instanceof RemoteOutcomeUnknownError) {
          run.attempts.push({ ...record, outcome: 'outcome_unknown', errorCode: 'REMOTE_OUTCOME_UNKNOWN', errorMessage: err.message });
          if (declared.command) run.effects[declared.name] = 'AMBIGUOUS';
          return { ...run, status: 'REMOTE_OUTCOME_UNKNOWN', failedStep: declared.name, errorCode: 'REMOTE_OUTCOME_UNKNOWN', errorMessage: err.message };
        }
        const failure = classifyFailure(err, { nonRetryableErrorTypes: nonRetryableErrorTypesOf(declared, definition) });
        const decision = decideFailure(failure, attempt - 1, retry);
        const failed = { ...record, errorCode: failure.errorCode, errorMessage: failure.errorMessage };
        if (decision.kind === 'in_progress') {
          run.attempts.push({ ...failed, outcome: 'in_progress', delayMs: decision.delayMs });
          if (++inProgress > MAX_IN_PROGRESS)
            throw new Error(`step ${declared.name} answered "in progress" ${MAX_IN_PROGRESS} times; a stand-in should finish`);
          continue;
        }
        if (decision.kind === 'retry') {
          run.attempts.push({ ...failed, outcome: 'retry', delayMs: decision.delayMs });
          if (declared.command) run.effects[declared.name] = 'FAILED_RETRYABLE';
          attempt++;
          continue;
        }
        run.attempts.push({ ...failed, outcome: 'failed' });
        if (declared.command) run.effects[declared.name] = failure.retryable ? 'FAILED_RETRYABLE' : failure.terminalEffectStatus;
        return {
          ...run,
          status: 'FAILED',
          failedStep: declared.name,
          terminalReason: decision.terminalReason,
          errorCode: failure.errorCode,
          errorMessage: failure.errorMessage,
          retriesObserved: attempt - 1,
        };
      }
    }
  }
  return { ...run, output: segment as OutputOf<P> };
}

/** A StepContext for calling one operator directly; its rejects are kept in `rejected`. */
export function stepContext(overrides: Partial<Omit<StepContext, 'reject'>> = {}): StepContext & { rejected: PendingReject[] } {
  const tenantId = overrides.tenantId ?? 'test';
  const executionId = overrides.executionId ?? 'memory-1';
  const stepIndex = overrides.stepIndex ?? 0;
  const attempt = overrides.attempt ?? 1;
  const key = overrides.transitionKey ?? makeTransitionKey(executionId, stepIndex, attempt);
  const rejects = new RejectBuffer(overrides.stepName ?? 'step');
  return {
    tenantId,
    executionId,
    correlationId: null,
    pipeline: 'test',
    stepIndex,
    stepName: 'step',
    attempt,
    transitionKey: key,
    idempotencyKey: idempotencyKey(tenantId, key),
    signal: new AbortController().signal,
    ...overrides,
    reject: rejects.reject,
    rejected: rejects.pending,
  };
}
