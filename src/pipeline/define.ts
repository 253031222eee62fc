/**
 * The developer-facing pipeline API: declare a pipeline as an ordered list of steps.
 *
 * ```ts
 * export const orders = definePipeline({
 *   name: 'orders',
 *   version: 2,
 *   steps: [
 *     localStep('validate', async (input: Order) => validate(input)),
 *     localStep('charge', charge, { command: true, retry: { limit: 3 } }),
 *     functionStep('notify', async (event, context) => send(event, context.invocationId)),
 *   ],
 * });
 * ```
 *
 * An operator gets its segment input and a StepContext carrying `idempotencyKey` (the
 * tenant-qualified transition identity: send it with anything it calls), the tenant and correlation ids
 * and an abort signal. It throws NonRetryableException for failures a retry cannot fix;
 * any other throw is retryable. Its return value, which must be JSON, is the next
 * step's segment input.
 *
 * `version` (a positive integer, default 1) names the definition's shape: give a changed
 * definition (a step inserted, removed, renamed, reordered, moved to another transport,
 * made a Command or not) the next version. An execution is pinned to the version it was
 * admitted under and runs that version's operators, by step name, to the end; keep the old
 * definition registered next to the new one while executions still run on it
 * (docs/decisions.md, "Pipeline definition versions"). A fingerprint of the shape is
 * derived too, so a shape changed without a new version is caught, never run.
 */
import { createHash } from 'node:crypto';
import type { RejectOptions } from '../activities/rejects';
import type { RetryOverride } from '../retry';
import type { Transport } from '../spec-words';

export type { RejectOptions, Transport };

export interface StepContext {
  tenantId: string;
  executionId: string;
  correlationId: string | null;
  pipeline: string;
  stepIndex: number;
  stepName: string;
  /** the committed attempt of this step, from 1 */
  attempt: number;
  /** `executionId:stepIndex:attempt`: the spec's transition identity, as in records and logs (unique within the tenant only) */
  transitionKey: string;
  /**
   * `{tenantId}/{executionId}:{stepIndex}:{attempt}`: the idempotency key to send to
   * anything this step calls (a payment provider shared by all tenants must never see
   * two tenants' transitions under one key). The same on every redelivery of the attempt.
   */
  idempotencyKey: string;
  /** aborted when the step's deadline passes or Temporal cancels the activity */
  signal: AbortSignal;
  /**
   * Reject one item and carry on (the Item Reject Sink): keeps metadata only, never the
   * item. Committed with the step's success; a failed attempt's rejects are dropped.
   */
  reject(item: unknown, options: RejectOptions): void;
}

export type Operator<I = any, O = any> = (input: I, ctx: StepContext) => O | Promise<O>;

/** Lambda-style context of a FUNCTION step. */
export interface FunctionContext {
  functionName: string;
  /** the tenant-qualified idempotency key `{tenantId}/{executionId}:{stepIndex}:{attempt}` */
  invocationId: string;
  tenantId: string;
  executionId: string;
  correlationId: string | null;
  attempt: number;
  getRemainingTimeInMillis(): number;
  signal: AbortSignal;
  reject(item: unknown, options: RejectOptions): void;
}

export type FunctionHandler<E = any, R = any> = (event: E, context: FunctionContext) => R | Promise<R>;

interface StepCommon {
  name: string;
  /** a side-effecting step whose effect is tracked in the CommandEffectStore */
  command?: boolean;
  /** overrides the pipeline's and the service's retry defaults */
  retry?: RetryOverride;
  /** the step's own deadline; default pipeline.orchestrator.worker.step-timeout */
  timeoutMs?: number;
}

/** A REST transition worker: the segment input is POSTed to `url`. */
export interface RestTarget {
  url: string;
  /**
   * Where the worker answers whether it recorded a transition (the worker kit's lookup
   * route), `{idempotencyKey}` standing for the URL-encoded key the call was sent with
   * (`{tenantId}/{executionId}:{stepIndex}:{attempt}`; `{transitionKey}` is read the same
   * way). Shown to operators on a REMOTE_OUTCOME_UNKNOWN execution; absent = none offered.
   */
  dispositionUrl?: string;
}

/** A gRPC TransitionWorker (proto/transition_worker.proto) at `address` (host:port). */
export interface GrpcTarget {
  address: string;
  /** the worker implements TransitionWorker.Lookup (the kit does); shown to operators on REMOTE_OUTCOME_UNKNOWN */
  lookup?: boolean;
}

export type StepDefinition =
  | (StepCommon & { transport: 'LOCAL'; run: Operator })
  | (StepCommon & { transport: 'FUNCTION'; handler: FunctionHandler })
  | (StepCommon & { transport: 'REST'; rest: RestTarget })
  | (StepCommon & { transport: 'GRPC'; grpc: GrpcTarget });

export interface PipelineDefinition {
  name: string;
  /** the definition's version, a positive integer; default 1. The highest registered version is the one new executions use. */
  version?: number;
  /**
   * false: registered for the executions pinned to it (runs and re-drives) but not given to
   * new executions, which keep the highest version that is not false. For a two-phase
   * rollout: ship the new version to every worker first, then make it current. Default true.
   */
  newExecutions?: boolean;
  steps: StepDefinition[];
  /** overrides the service's retry defaults for every step of the pipeline */
  retry?: RetryOverride;
}

export function localStep<I, O>(name: string, run: Operator<I, O>, options: Omit<StepCommon, 'name'> = {}): StepDefinition {
  return { ...options, name, transport: 'LOCAL', run };
}

export function functionStep<E, R>(name: string, handler: FunctionHandler<E, R>, options: Omit<StepCommon, 'name'> = {}): StepDefinition {
  return { ...options, name, transport: 'FUNCTION', handler };
}

/**
 * A step run by a remote REST transition worker. `timeoutMs` is the caller deadline
 * (default pipeline.orchestrator.worker.rest.request-timeout); past it the execution is
 * parked as REMOTE_OUTCOME_UNKNOWN, never retried on its own.
 */
export function restStep(name: string, rest: RestTarget, options: Omit<StepCommon, 'name'> = {}): StepDefinition {
  try {
    new URL(rest.url);
  } catch {
    throw new TypeError(`step "${name}": REST url "${rest.url}" is not a URL`);
  }
  return { ...options, name, transport: 'REST', rest };
}

/**
 * A step run by a remote gRPC transition worker. `timeoutMs` is the caller deadline
 * (default pipeline.orchestrator.worker.grpc.request-timeout); DEADLINE_EXCEEDED parks the
 * execution as REMOTE_OUTCOME_UNKNOWN.
 */
export function grpcStep(name: string, grpc: GrpcTarget, options: Omit<StepCommon, 'name'> = {}): StepDefinition {
  if (!/^[A-Za-z0-9.-]+:\d{1,5}$/.test(grpc.address)) throw new TypeError(`step "${name}": gRPC address "${grpc.address}" must be host:port`);
  return { ...options, name, transport: 'GRPC', grpc };
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** A declared pipeline: its version resolved and the fingerprint of its shape derived. */
export interface VersionedPipeline extends PipelineDefinition {
  version: number;
  /** 16 hex digits of SHA-256 over the ordered step names, transports and Command flags */
  fingerprint: string;
}

/** The shape that decides which step runs where: order, names, transports, Command flags. */
export function definitionShape(steps: readonly Pick<StepDefinition, 'name' | 'transport' | 'command'>[]) {
  return steps.map((step) => ({ name: step.name, transport: step.transport, command: step.command === true }));
}

export function definitionFingerprint(steps: readonly Pick<StepDefinition, 'name' | 'transport' | 'command'>[]): string {
  return createHash('sha256')
    .update(JSON.stringify(definitionShape(steps)))
    .digest('hex')
    .slice(0, 16);
}

/** Checks a pipeline when it is declared, so a mistake fails at start-up and not mid-run. */
export function definePipeline(definition: PipelineDefinition): VersionedPipeline {
  if (!NAME.test(definition.name)) throw new TypeError(`pipeline name "${definition.name}" must match ${NAME}`);
  const version = definition.version ?? 1;
  if (!Number.isSafeInteger(version) || version < 1)
    throw new TypeError(`pipeline "${definition.name}": version ${String(definition.version)} must be a positive integer`);
  if (definition.steps.length === 0) throw new TypeError(`pipeline "${definition.name}" has no steps`);
  const seen = new Set<string>();
  for (const step of definition.steps) {
    if (!NAME.test(step.name)) throw new TypeError(`pipeline "${definition.name}": step name "${step.name}" must match ${NAME}`);
    if (seen.has(step.name)) throw new TypeError(`pipeline "${definition.name}": step name "${step.name}" is used twice`);
    seen.add(step.name);
  }
  return { ...definition, version, fingerprint: definitionFingerprint(definition.steps) };
}

/** A failure no retry can fix (bad payload, broken contract). Ends in `non_retryable`. */
export class NonRetryableException extends Error {
  constructor(
    message: string,
    readonly code = 'NON_RETRYABLE',
  ) {
    super(message);
    this.name = 'NonRetryableException';
  }
}

/** A Command step whose effect needs a person before anything else is tried. Ends in `non_retryable`. */
export class UserActionRequiredException extends NonRetryableException {
  constructor(message: string, code = 'USER_ACTION_REQUIRED') {
    super(message, code);
    this.name = 'UserActionRequiredException';
  }
}
