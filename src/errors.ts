/**
 * The error hierarchy. Every error the service raises on purpose has a stable machine
 * `code` and an HTTP `status`; the API's error handler maps them to
 * application/problem+json bodies (RFC 9457).
 *
 * `ERROR_CODES` is the one list of codes: the constructor only takes a code from it, the
 * OpenAPI document describes its error responses from it, and a test checks that
 * docs/api.md's error table lists exactly these codes with these statuses.
 */

/** Every `code` a problem+json answer (or a start-up error) can carry, its HTTP status and what it means. */
export const ERROR_CODES = {
  INVALID_ID: { status: 400, title: 'a path id is not 1–128 characters of [A-Za-z0-9._-] starting alphanumeric' },
  INVALID_JSON: { status: 400, title: 'the body is not UTF-8 JSON' },
  VALIDATION_FAILED: { status: 400, title: 'the body or query does not match the schema' },
  INVALID_CURSOR: { status: 400, title: 'a cursor this API did not return' },
  UNSTORABLE_VALUE: { status: 400, title: 'a value the database refused as data; nothing changed' },
  UNAUTHORIZED: { status: 401, title: 'missing, malformed or unknown bearer token' },
  FORBIDDEN: { status: 403, title: 'the token may not use this route or tenant' },
  EXECUTION_NOT_FOUND: { status: 404, title: 'no such execution in this tenant' },
  ROUTE_NOT_FOUND: { status: 404, title: 'no such route' },
  JOB_NOT_FOUND: { status: 404, title: 'no such bulk re-drive job in this tenant' },
  METHOD_NOT_ALLOWED: { status: 405, title: 'the path exists, under other methods; Allow lists them' },
  REQUEST_TIMEOUT: { status: 408, title: 'the body did not arrive in time' },
  EXECUTION_EXISTS: { status: 409, title: 'the executionId is already used in this tenant' },
  VERSION_MISMATCH: { status: 409, title: 'expectedVersion is not the stored version (currentVersion says which is)' },
  EXECUTION_ACTIVE: { status: 409, title: 're-drive: a run of the execution is active' },
  EXECUTION_SUCCEEDED: { status: 409, title: 're-drive: the execution succeeded; start a new one' },
  ALLOW_FAILED_REQUIRED: { status: 409, title: 're-drive of a FAILED or REMOTE_OUTCOME_UNKNOWN execution needs allowFailed=true' },
  RETRY_FAILED_COMMAND_INTENT_REQUIRED: { status: 409, title: 're-drive of a failed Command step with a retained effect needs intent=RETRY_FAILED_COMMAND' },
  COMMAND_EFFECT_NOT_REDISPATCHABLE: { status: 409, title: 'the retained Command effect is not FAILED_RETRYABLE; it is never redispatched' },
  DISPOSITION_UNCONFIRMED: { status: 409, title: 're-drive of REMOTE_OUTCOME_UNKNOWN needs confirmedDisposition=NOT_APPLIED' },
  DISPOSITION_CONTRADICTED: { status: 409, title: "the worker's own record contradicts confirmedDisposition=NOT_APPLIED" },
  WORKER_RECORDED_FAILED_ATTEMPT: {
    status: 409,
    title: "re-drive of a FAILED remote step: the worker's lookup recorded one of its identities (the effect may have happened)",
  },
  JOB_FINISHED: { status: 409, title: 'the bulk re-drive job is ABORTED, COMPLETED or FAILED; start a new one' },
  EXECUTION_NOT_SUCCEEDED: { status: 409, title: 'result: the execution has not succeeded (yet); executionStatus says its status' },
  PIPELINE_DEFINITION_CHANGED: { status: 409, title: 'the pinned pipeline version is gone or the step to resume does not exist by name' },
  BODY_TOO_LARGE: { status: 413, title: 'the body is over 64 KiB' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Content-Type is not JSON' },
  UNKNOWN_PIPELINE: { status: 422, title: 'no pipeline of that name is registered' },
  EXECUTION_NOT_FAILED: { status: 422, title: 'intent=RETRY_FAILED_COMMAND on an execution that is not FAILED' },
  FAILED_STEP_NOT_RETAINED: { status: 422, title: 'intent=RETRY_FAILED_COMMAND on an execution that does not keep its failed step index' },
  CODEC_PAYLOAD_UNREADABLE: { status: 422, title: 'codec endpoint: a payload sealed under a key id no longer configured, or tampered' },
  SELECTION_EMPTY: { status: 422, title: 'the bulk re-drive selection matches no execution that can be selected' },
  SELECTION_TOO_LARGE: { status: 422, title: 'the bulk re-drive selection matches more than 10,000 executions; narrow it' },
  RETRY_INTENT_UNSUPPORTED: { status: 422, title: 'intent=RETRY_FAILED_COMMAND on a store without durable retry intent' },
  INTERNAL: { status: 500, title: 'an unexpected error; the service log has its kind' },
  CONFIG_INVALID: { status: 500, title: 'the configuration cannot be used; the service does not start' },
  DISPOSITION_EVIDENCE_UNAVAILABLE: { status: 503, title: "the worker's disposition lookup cannot be reached" },
  STORE_UNAVAILABLE: { status: 503, title: 'Postgres cannot be reached or is restarting; retry after Retry-After' },
  TEMPORAL_UNAVAILABLE: { status: 503, title: 'Temporal did not answer in time; nothing changed, retry after Retry-After' },
  NOT_READY: { status: 503, title: 'a readiness check is down, or the process is stopping' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/**
 * The `errorCode`s the engine itself gives a failed LOCAL or FUNCTION step (on the record,
 * in the DLQ envelope, as a metric label), whether the step is retried, and what it means.
 * An operator's own code (`NonRetryableError(message, code)`, an error's `code`) is
 * passed through instead when it looks like one. docs/runbook.md explains each (a test
 * holds it to this list).
 */
export const STEP_ERROR_CODES = {
  OPERATOR_ERROR: { retryable: true, title: 'the operator threw an error without a code of its own' },
  OPERATOR_BUG: {
    retryable: false,
    title: "the operator threw a programming error (TypeError, ReferenceError, SyntaxError, RangeError, or the step's nonRetryableErrorTypes)",
  },
  STEP_TIMEOUT: { retryable: true, title: "the step's own deadline passed" },
  NON_RETRYABLE: { retryable: false, title: 'NonRetryableError without a valid code' },
  USER_ACTION_REQUIRED: { retryable: false, title: 'UserActionRequiredError: a person must act on the external system' },
  OPERATOR_OUTPUT_NOT_SERIALIZABLE: { retryable: false, title: 'the operator returned what JSON cannot carry' },
  COMMAND_EFFECT_NOT_REDISPATCHABLE: { retryable: false, title: 'the retained Command effect is not FAILED_RETRYABLE' },
  RETRY_INTENT_NOT_A_COMMAND: { retryable: false, title: 'intent=RETRY_FAILED_COMMAND reached a step that is not a Command' },
  PIPELINE_STEP_GONE: { retryable: false, title: 'the pinned version or its step is no longer registered on the worker' },
  STEP_ABANDONED: { retryable: true, title: 'the worker kept dying while running the step; Temporal gave up' },
  RUN_TERMINATED: { retryable: false, title: "the execution's Temporal run was terminated (Terminate, or a Reset of the running run) before it ended" },
  RUN_CANCELLED: { retryable: false, title: "the execution's Temporal run was cancelled (Request Cancellation) before it ended" },
  RUN_TIMED_OUT: { retryable: false, title: "the execution's Temporal run hit its run timeout before it ended" },
  EXECUTION_RECORD_MISSING: { retryable: false, title: "the execution's record was deleted under a running workflow" },
} as const satisfies Record<string, { retryable: boolean; title: string }>;

export type StepErrorCode = keyof typeof STEP_ERROR_CODES;

export interface PipelineErrorOptions {
  /** the error this one explains (kept as `cause`, never sent to a client) */
  cause?: unknown;
}

/** The codes whose registered HTTP status is `S` (a class that always answers 409 takes only 409 codes). */
export type CodeWithStatus<S extends number> = { [C in ErrorCode]: (typeof ERROR_CODES)[C]['status'] extends S ? C : never }[ErrorCode];

/**
 * An error the service raises on purpose. Its HTTP `status` is always the code's own in
 * ERROR_CODES: no caller chooses or overrides it, so the document, the docs' error table
 * and every answer agree.
 */
export class PipelineError extends Error {
  /** the HTTP status, from ERROR_CODES */
  readonly status: number;

  /**
   * @param extra fields added to the problem+json body (ids, versions, evidence; never payload data).
   *   `type`, `title`, `status`, `detail` and `code` are the problem's own members and cannot be set here.
   */
  constructor(
    message: string,
    readonly code: ErrorCode,
    readonly extra: Record<string, unknown> = {},
    options: PipelineErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.status = ERROR_CODES[code].status;
    const reserved = Object.keys(extra).filter((key) => PROBLEM_MEMBERS.has(key));
    if (reserved.length > 0) throw new TypeError(`PipelineError ${code}: extra may not set the problem's own ${reserved.join(', ')}`);
  }
}

/** The members RFC 9457 (and this API's Problem schema) gives a meaning of their own. */
const PROBLEM_MEMBERS = new Set(['type', 'title', 'status', 'detail', 'code', 'instance']);

/** Configuration cannot be used; the service refuses to start. */
export class ConfigError extends PipelineError {
  constructor(message: string, options?: PipelineErrorOptions) {
    super(message, 'CONFIG_INVALID', {}, options);
  }
}

/** One issue of a 400, as the Problem schema states it: the member's dotted path, a code, a message (never the value). */
export interface ProblemIssue {
  path: string;
  code: string;
  message: string;
}

export class ValidationError extends PipelineError {
  constructor(message: string, issues: ProblemIssue[] = []) {
    super(message, 'VALIDATION_FAILED', { issues });
  }
}

export class UnauthorizedError extends PipelineError {
  constructor(message = 'a valid bearer token is required') {
    super(message, 'UNAUTHORIZED');
  }
}

export class ForbiddenError extends PipelineError {
  constructor(message: string) {
    super(message, 'FORBIDDEN');
  }
}

export class NotFoundError extends PipelineError {
  constructor(message: string, code: CodeWithStatus<404> = 'ROUTE_NOT_FOUND') {
    super(message, code);
  }
}

/** The execution does not exist in this tenant (the same answer when it exists in another). */
export class ExecutionNotFoundError extends NotFoundError {
  constructor(tenantId: string, executionId: string) {
    super(`execution ${executionId} not found in tenant ${tenantId}`, 'EXECUTION_NOT_FOUND');
  }
}

export class ConflictError extends PipelineError {
  constructor(message: string, code: CodeWithStatus<409>, extra: Record<string, unknown> = {}, options?: PipelineErrorOptions) {
    super(message, code, extra, options);
  }
}

/** A start with an executionId the tenant already used. */
export class ExecutionExistsError extends ConflictError {
  constructor(tenantId: string, executionId: string) {
    super(`execution ${executionId} already exists in tenant ${tenantId}`, 'EXECUTION_EXISTS');
  }
}

/** The caller's expectedVersion is not the stored one (or another writer moved it meanwhile); the body says the current one. */
export class VersionMismatchError extends ConflictError {
  constructor(executionId: string, currentVersion: number | null, detail = `execution ${executionId} is at version ${currentVersion}`) {
    super(detail, 'VERSION_MISMATCH', { currentVersion });
  }
}

/** The codes a single re-drive's admission refuses with (the state does not allow it, or the store cannot do it). */
export type RedriveRefusalCode =
  | 'EXECUTION_ACTIVE'
  | 'EXECUTION_SUCCEEDED'
  | 'ALLOW_FAILED_REQUIRED'
  | 'RETRY_FAILED_COMMAND_INTENT_REQUIRED'
  | 'COMMAND_EFFECT_NOT_REDISPATCHABLE'
  | 'DISPOSITION_UNCONFIRMED'
  | 'EXECUTION_NOT_FAILED'
  | 'FAILED_STEP_NOT_RETAINED'
  | 'RETRY_INTENT_UNSUPPORTED';

/**
 * Re-drive admission said no: the state does not allow this re-drive (409) or the request
 * asks for something this execution or store cannot do (422). `code` says which rule.
 */
export class RedriveRefusedError extends PipelineError {
  constructor(code: RedriveRefusalCode, detail: string, extra: Record<string, unknown> = {}) {
    super(detail, code, extra);
  }
}

/**
 * A bulk re-drive's selection cannot make a job: it matches nothing that can be selected
 * (`excluded` counts what was left out, by reason) or more than a job may hold.
 */
export class SelectionError extends PipelineError {
  constructor(code: 'SELECTION_EMPTY' | 'SELECTION_TOO_LARGE', detail: string, extra: { excluded?: Record<string, number> } = {}) {
    super(detail, code, extra);
  }
}

/** No bulk re-drive job of that id in this tenant. */
export class JobNotFoundError extends NotFoundError {
  constructor(jobId: string) {
    super(`no bulk re-drive job ${jobId} in this tenant`, 'JOB_NOT_FOUND');
  }
}

/** The job is finished (ABORTED, COMPLETED or FAILED): `jobStatus` says which; `status` stays the HTTP status (RFC 9457). */
export class JobFinishedError extends ConflictError {
  constructor(jobId: string, jobStatus: string, action: string) {
    super(`job ${jobId} is ${jobStatus}; it can no longer ${action}`, 'JOB_FINISHED', { jobStatus });
  }
}

export class UnknownPipelineError extends PipelineError {
  constructor(pipeline: string) {
    super(`pipeline "${pipeline}" is not registered`, 'UNKNOWN_PIPELINE');
  }
}

/** Temporal did not answer a call made while answering a request (deadline, unreachable). Retry later. */
export class TemporalUnavailableError extends PipelineError {
  constructor(message: string, options?: PipelineErrorOptions) {
    super(message, 'TEMPORAL_UNAVAILABLE', {}, options);
  }
}

/** The store (Postgres) cannot be reached or is restarting, and retrying a few times did not help. Retry later. */
export class StoreUnavailableError extends PipelineError {
  constructor(cause: unknown) {
    super('the store (Postgres) is unavailable; retry later', 'STORE_UNAVAILABLE', {}, { cause });
  }
}

/**
 * A long-lived JSON value read back from the store no longer matches its schema (a schema
 * changed under a row written before it): an error naming the row and the field, never a
 * silent cast. The row is left as it is for an operator to look at.
 */
export class StoredValueError extends PipelineError {
  constructor(table: string, row: string, field: string, issue: string) {
    super(`${table} ${row}: the stored ${field} no longer parses (${issue})`, 'INTERNAL', { table, row, field });
  }
}

/**
 * An error and its causes (`cause`, up to `max` deep), each as its message and `code`: a client
 * library's error often wraps the one that names the problem (the Temporal SDK's "Failed to
 * connect", the store's StoreUnavailableError), and start-up diagnosis reads the whole chain.
 */
export function causeChain(err: unknown, max = 5): { message: string; code: unknown }[] {
  const chain: { message: string; code: unknown }[] = [];
  for (let at: unknown = err; at && chain.length < max; at = (at as { cause?: unknown }).cause) {
    chain.push({ message: errorMessage(at), code: (at as { code?: unknown }).code });
  }
  return chain;
}

/** What was thrown, as its message: an Error's `message`, anything else as text. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * A caught error as one bounded line for a log field or a stored `last_error`: `Name: message`
 * cut to `max` characters (an error's message is Temporal's, Postgres's or a client's words,
 * never payload data, but it can be long); `fallback` (or the thrown value as text) when what was
 * thrown is not an Error.
 */
export function errorLine(err: unknown, fallback?: string, max = 300): string {
  return (err instanceof Error ? `${err.name}: ${err.message}` : (fallback ?? String(err))).slice(0, max);
}
