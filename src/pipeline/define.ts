/**
 * The developer-facing pipeline API: declare a pipeline as an ordered chain of steps, each
 * step's input type the previous step's output type, checked by the compiler:
 *
 * ```ts
 * export const orders = pipeline('orders', { version: 2 })
 *   .step(localStep('validate', async (input: Order) => validate(input)))
 *   .step(localStep('charge', charge, { command: true, retry: { limit: 3 } }))
 *   .step(functionStep('notify', async (event, context) => send(event, context.invocationId)));
 * ```
 *
 * Outputs cross a process boundary as JSON, so a step's output type must be what JSON
 * carries (`JsonSafe`): a `Date`, a class instance with methods, a function or a bigint is a
 * compile error (the message says a Date arrives as its ISO string: declare it so). At a step
 * whose input does not accept the previous output, the compiler's first line names the step
 * (`StepDefinition<Shipment, string, "ship">` is not assignable to `StepDefinition<ValidInvoice,
 * string, "ship">`). A remote step without type arguments is `unknown` in and out, so the step
 * after it must check what it got. `definePipeline({ name, steps: [...] })` is the same
 * thing **untyped between steps** (each step's input is not checked against the one before):
 * prefer the chain.
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

/**
 * `T` as JSON carries it, or `never` where it cannot: strings, numbers, booleans, null,
 * arrays and plain objects of them (an absent or `undefined` property is dropped). A step's
 * output type `O` must satisfy `O extends JsonSafe<O>`: a `Date` (it would arrive as a
 * string), a `Map`, a function or a `bigint` anywhere in it is a compile error.
 */
export type JsonSafe<T> = unknown extends T
  ? T
  : T extends string | number | boolean | null | undefined | void
    ? T
    : T extends Date
      ? DateArrivesAsString
      : T extends bigint | symbol | ((...args: never[]) => unknown)
        ? never
        : T extends Map<unknown, unknown> | Set<unknown> | WeakMap<object, unknown> | WeakSet<object>
          ? never
          : T extends object
            ? { [K in keyof T]: JsonSafe<T[K]> }
            : never;

/** What JSON makes of a `Date` in a step's output, as the compiler shows it: declare the field as its ISO string. */
export type DateArrivesAsString = 'a Date reaches the next step as its ISO string: declare this field as string (date.toISOString())';

/** `Target` when `O` is JSON-safe, else a type no target satisfies, so the call names the problem. */
type IfJson<O, Target> = [O] extends [JsonSafe<O>]
  ? Target
  : { outputTypeIsNotJson: 'the output type holds a Date, Map, function or bigint; declare what JSON carries' };

/** Where a step's input and output types are kept for the compiler; never present at run time. */
declare const stepTypes: unique symbol;

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
  /**
   * Error names (`err.name`) that end this step \`non_retryable\` with code OPERATOR_BUG instead
   * of being retried, like Temporal's nonRetryableErrorTypes. Overrides the pipeline's list;
   * default ['TypeError', 'ReferenceError', 'SyntaxError', 'RangeError'] (programming errors a
   * retry cannot fix); `[]` retries them like any other error.
   */
  nonRetryableErrorTypes?: string[];
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

/** A gRPC TransitionWorker (the worker kit's proto/transition_worker.proto) at `address` (host:port). */
export interface GrpcTarget {
  address: string;
  /** the worker implements TransitionWorker.Lookup (the kit does); shown to operators on REMOTE_OUTCOME_UNKNOWN */
  lookup?: boolean;
}

/**
 * One step. `I` and `O` are its input and output types for the compiler (a local step's from
 * its operator, `any` where it says none; a remote step's `unknown` unless it names them), `N`
 * its name as the compiler shows it; a pipeline chain checks them against its neighbours.
 */
export type StepDefinition<I = any, O = any, N extends string = string> = (
  | (StepCommon & { transport: 'LOCAL'; run: Operator })
  | (StepCommon & { transport: 'FUNCTION'; handler: FunctionHandler })
  | (StepCommon & { transport: 'REST'; rest: RestTarget })
  | (StepCommon & { transport: 'GRPC'; grpc: GrpcTarget })
) & { readonly [stepTypes]?: { input: (input: I) => void; output: O; name: N } };

/** The options every step takes. */
export type StepOptions = Omit<StepCommon, 'name'>;

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
  /** error names retried never, for every step without its own list (see StepOptions); default the four programming errors */
  nonRetryableErrorTypes?: string[];
}

/** A step run in the worker's process. `O` must be JSON (see JsonSafe). */
export function localStep<I = any, O = any, N extends string = string>(
  name: N,
  run: Operator<I, O & JsonSafe<O>>,
  options: StepOptions = {},
): StepDefinition<I, O, N> {
  checkStep(name, options);
  if (typeof run !== 'function') throw new TypeError(`step "${name}": run must be a function, got ${typeof run}`);
  return { ...options, name, transport: 'LOCAL', run };
}

/** A Lambda-style step: `handler(event, context)`. `R` must be JSON (see JsonSafe). */
export function functionStep<E = any, R = any, N extends string = string>(
  name: N,
  handler: FunctionHandler<E, R & JsonSafe<R>>,
  options: StepOptions = {},
): StepDefinition<E, R, N> {
  checkStep(name, options);
  if (typeof handler !== 'function') throw new TypeError(`step "${name}": handler must be a function, got ${typeof handler}`);
  return { ...options, name, transport: 'FUNCTION', handler };
}

/**
 * A step run by a remote REST transition worker. `timeoutMs` is the caller deadline
 * (default pipeline.orchestrator.worker.rest.request-timeout); past it the execution is
 * parked as REMOTE_OUTCOME_UNKNOWN, never retried on its own. Name the types the worker
 * takes and answers: `restStep<Invoice, Rendered>('render', { url })`.
 */
export function restStep<I = unknown, O = unknown, N extends string = string>(
  name: N,
  target: IfJson<O, RestTarget>,
  options: StepOptions = {},
): StepDefinition<I, O, N> {
  const rest = target as RestTarget;
  checkStep(name, options);
  let url: URL;
  try {
    url = new URL(rest?.url);
  } catch {
    throw new TypeError(`step "${name}": rest.url "${rest?.url}" is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`step "${name}": rest.url must be http or https, not ${url.protocol}`);
  if (rest.dispositionUrl !== undefined) {
    if (!/\{(idempotencyKey|transitionKey)\}/.test(rest.dispositionUrl))
      throw new TypeError(`step "${name}": rest.dispositionUrl must contain {idempotencyKey} (or {transitionKey}) where the key goes`);
    let lookup: URL;
    try {
      lookup = new URL(rest.dispositionUrl.replace(/\{(idempotencyKey|transitionKey)\}/g, 'key'));
    } catch {
      throw new TypeError(`step "${name}": rest.dispositionUrl "${rest.dispositionUrl}" is not a URL`);
    }
    if (lookup.protocol !== 'http:' && lookup.protocol !== 'https:')
      throw new TypeError(`step "${name}": rest.dispositionUrl must be http or https, not ${lookup.protocol}`);
  }
  return { ...options, name, transport: 'REST', rest };
}

/**
 * A step run by a remote gRPC transition worker. `timeoutMs` is the caller deadline
 * (default pipeline.orchestrator.worker.grpc.request-timeout); DEADLINE_EXCEEDED parks the
 * execution as REMOTE_OUTCOME_UNKNOWN.
 */
export function grpcStep<I = unknown, O = unknown, N extends string = string>(
  name: N,
  target: IfJson<O, GrpcTarget>,
  options: StepOptions = {},
): StepDefinition<I, O, N> {
  const grpc = target as GrpcTarget;
  checkStep(name, options);
  if (!/^[A-Za-z0-9.-]+:\d{1,5}$/.test(grpc?.address)) throw new TypeError(`step "${name}": grpc.address "${grpc?.address}" must be host:port`);
  return { ...options, name, transport: 'GRPC', grpc };
}

/** A value a definition cannot run with, named by step and field, when the step is declared rather than mid-run. */
function checkStep(name: string, options: StepOptions | undefined): void {
  if (typeof name !== 'string' || !NAME.test(name)) throw new TypeError(`step name ${JSON.stringify(name)} must match ${NAME}`);
  if (options === null || typeof options !== 'object') throw new TypeError(`step "${name}": options must be an object`);
  const where = `step "${name}"`;
  checkRetry(where, options.retry);
  if (options.timeoutMs !== undefined && !(Number.isSafeInteger(options.timeoutMs) && options.timeoutMs > 0))
    throw new TypeError(`${where}: timeoutMs ${String(options.timeoutMs)} must be a positive integer of milliseconds`);
  if (options.command !== undefined && typeof options.command !== 'boolean') throw new TypeError(`${where}: command must be true or false`);
  checkErrorTypes(where, options.nonRetryableErrorTypes);
}

function checkRetry(where: string, retry: RetryOverride | undefined): void {
  if (retry === undefined) return;
  if (retry === null || typeof retry !== 'object') throw new TypeError(`${where}: retry must be an object`);
  if (retry.limit !== undefined && !(Number.isSafeInteger(retry.limit) && retry.limit >= 0))
    throw new TypeError(`${where}: retry.limit ${String(retry.limit)} must be an integer ≥ 0 (retries after the first attempt)`);
  for (const field of ['waitMs', 'maxBackoffMs'] as const) {
    const value = retry[field];
    if (value !== undefined && !(Number.isFinite(value) && value >= 0))
      throw new TypeError(`${where}: retry.${field} ${String(value)} must be a number of milliseconds ≥ 0`);
  }
  if (retry.jitter !== undefined && typeof retry.jitter !== 'boolean') throw new TypeError(`${where}: retry.jitter must be true or false`);
}

function checkErrorTypes(where: string, types: string[] | undefined): void {
  if (types !== undefined && !(Array.isArray(types) && types.every((type) => typeof type === 'string' && type.length > 0)))
    throw new TypeError(`${where}: nonRetryableErrorTypes must be a list of error names`);
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
  if (!Array.isArray(definition.steps) || definition.steps.length === 0) throw new TypeError(`pipeline "${definition.name}" has no steps`);
  checkRetry(`pipeline "${definition.name}"`, definition.retry);
  checkErrorTypes(`pipeline "${definition.name}"`, definition.nonRetryableErrorTypes);
  const seen = new Set<string>();
  for (const step of definition.steps) {
    if (step === null || typeof step !== 'object')
      throw new TypeError(`pipeline "${definition.name}": a step is ${String(step)}; declare it with localStep, functionStep, restStep or grpcStep`);
    if (!NAME.test(step.name)) throw new TypeError(`pipeline "${definition.name}": step name "${step.name}" must match ${NAME}`);
    if (seen.has(step.name)) throw new TypeError(`pipeline "${definition.name}": step name "${step.name}" is used twice`);
    seen.add(step.name);
  }
  return { ...definition, version, fingerprint: definitionFingerprint(definition.steps) };
}

/** What `pipeline(name, options)` takes: every field of a definition but its name and steps. */
export type PipelineOptions = Omit<PipelineDefinition, 'name' | 'steps'>;

declare const pipelineTypes: unique symbol;

/**
 * A pipeline whose first step takes `In` and whose last step returns `Out`, registered like
 * any other (it is a VersionedPipeline). `.step(next)` appends a step whose input type must
 * accept `Out`, and returns the longer pipeline; the shorter one is left as it was.
 */
export interface TypedPipeline<In, Out> extends VersionedPipeline {
  readonly [pipelineTypes]?: { input: (input: In) => void; output: Out };
  step<Next, N extends string>(step: StepDefinition<Out, Next, N>): TypedPipeline<In, Next>;
}

/** A pipeline before its first step: the first step's input type becomes the pipeline's. */
export interface PipelineStart {
  readonly name: string;
  step<I, O>(step: StepDefinition<I, O>): TypedPipeline<I, O>;
}

/** The input type of a typed pipeline (what `POST …/executions` must send as `input`). */
export type PipelineInput<P> = P extends TypedPipeline<infer I, any> ? I : never;
/** The output type of a typed pipeline (what `GET …/result` answers). */
export type PipelineOutput<P> = P extends TypedPipeline<any, infer O> ? O : never;
/** The input type of a typed pipeline, `unknown` for an untyped one (what a start takes). */
export type InputOf<P> = P extends TypedPipeline<infer I, any> ? I : unknown;
/** The output type of a typed pipeline, `unknown` for an untyped one (what a result answers). */
export type OutputOf<P> = P extends TypedPipeline<any, infer O> ? O : unknown;

/**
 * A typed pipeline, step by step:
 * `pipeline('invoices', { version: 1 }).step(localStep('validate', validate)).step(...)`.
 * Each `.step` is checked when it is called (names, options), as definePipeline checks.
 */
export function pipeline(name: string, options: PipelineOptions = {}): PipelineStart {
  if (typeof name !== 'string' || !NAME.test(name)) throw new TypeError(`pipeline name ${JSON.stringify(name)} must match ${NAME}`);
  const chain = (steps: StepDefinition[]): TypedPipeline<any, any> => ({
    ...definePipeline({ ...options, name, steps }),
    step: (next: StepDefinition) => chain([...steps, next]),
  });
  return { name, step: (first: StepDefinition) => chain([first]) };
}

/** A failure no retry can fix (bad payload, broken contract). Ends in `non_retryable`. */
export class NonRetryableError extends Error {
  constructor(
    message: string,
    readonly code = 'NON_RETRYABLE',
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** A Command step whose effect needs a person before anything else is tried. Ends in `non_retryable`. */
export class UserActionRequiredError extends NonRetryableError {
  constructor(message: string, code = 'USER_ACTION_REQUIRED') {
    super(message, code);
  }
}

/** @deprecated the same class as {@link NonRetryableError}: use that name (JavaScript errors end in `Error`). */
export const NonRetryableException = NonRetryableError;
/** @deprecated an old name of NonRetryableError, kept so existing pipelines compile. */
export type NonRetryableException = NonRetryableError;
/** @deprecated the same class as {@link UserActionRequiredError}: use that name. */
export const UserActionRequiredException = UserActionRequiredError;
/** @deprecated an old name of UserActionRequiredError, kept so existing pipelines compile. */
export type UserActionRequiredException = UserActionRequiredError;
