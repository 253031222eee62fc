/**
 * The error hierarchy. Every error the service raises on purpose has a stable
 * machine `code` and an HTTP `status`; the API's error handler maps them to
 * application/problem+json bodies.
 */
export class PipelineError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly status: number,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** Configuration cannot be used; the service refuses to start. */
export class ConfigError extends PipelineError {
  constructor(message: string) {
    super(message, 'CONFIG_INVALID', 500);
  }
}

export class ValidationError extends PipelineError {
  constructor(message: string, issues: unknown[] = []) {
    super(message, 'VALIDATION_FAILED', 400, { issues });
  }
}

export class UnauthorizedError extends PipelineError {
  constructor(message = 'a valid bearer token is required') {
    super(message, 'UNAUTHORIZED', 401);
  }
}

export class ForbiddenError extends PipelineError {
  constructor(message: string) {
    super(message, 'FORBIDDEN', 403);
  }
}

export class NotFoundError extends PipelineError {
  constructor(message: string, code = 'NOT_FOUND') {
    super(message, code, 404);
  }
}

export class ConflictError extends PipelineError {
  constructor(message: string, code: string, extra: Record<string, unknown> = {}) {
    super(message, code, 409, extra);
  }
}

export class UnknownPipelineError extends PipelineError {
  constructor(pipeline: string) {
    super(`pipeline "${pipeline}" is not registered`, 'UNKNOWN_PIPELINE', 422);
  }
}

/** Temporal did not answer a call made while answering a request (deadline, unreachable). Retry later. */
export class TemporalUnavailableError extends PipelineError {
  constructor(message: string) {
    super(message, 'TEMPORAL_UNAVAILABLE', 503);
  }
}

/** The store (Postgres) cannot be reached or is restarting, and retrying a few times did not help. Retry later. */
export class StoreUnavailableError extends PipelineError {
  constructor(cause: unknown) {
    super('the store (Postgres) is unavailable; retry later', 'STORE_UNAVAILABLE', 503);
    this.cause = cause;
  }
}
