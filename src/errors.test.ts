/**
 * One constructor path: every error the service raises answers its code's own status from
 * ERROR_CODES, whatever class raised it, and no caller can put another `status` (or any of
 * the problem's own members) into the body.
 */
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { problemHandler } from './api/problem';
import { BodyTooLargeError, RequestTimeoutError } from './api/middleware/body-limits';
import { DefinitionChangedError } from './service/redrive-definition';
import {
  ConfigError,
  causeChain,
  errorLine,
  errorMessage,
  ConflictError,
  ERROR_CODES,
  ExecutionExistsError,
  ExecutionNotFoundError,
  ForbiddenError,
  JobFinishedError,
  JobNotFoundError,
  NotFoundError,
  PipelineError,
  RedriveRefusedError,
  SelectionError,
  StoreUnavailableError,
  StoredValueError,
  TemporalUnavailableError,
  UnauthorizedError,
  UnknownPipelineError,
  ValidationError,
  VersionMismatchError,
} from './errors';

const every: PipelineError[] = [
  new ConfigError('x'),
  new ValidationError('x'),
  new UnauthorizedError(),
  new ForbiddenError('x'),
  new NotFoundError('x'),
  new ExecutionNotFoundError('t', 'e'),
  new ConflictError('x', 'EXECUTION_ACTIVE'),
  new ExecutionExistsError('t', 'e'),
  new VersionMismatchError('e', 3),
  new RedriveRefusedError('EXECUTION_NOT_FAILED', 'x'),
  new RedriveRefusedError('ALLOW_FAILED_REQUIRED', 'x'),
  new SelectionError('SELECTION_EMPTY', 'x', { excluded: { ACTIVE: 2 } }),
  new SelectionError('SELECTION_TOO_LARGE', 'x'),
  new JobNotFoundError('j'),
  new JobFinishedError('j', 'ABORTED', 'pause'),
  new UnknownPipelineError('p'),
  new TemporalUnavailableError('x'),
  new StoreUnavailableError(new Error('down')),
  new StoredValueError('redrive_job', 'j', 'request', 'x'),
  new BodyTooLargeError(10),
  new RequestTimeoutError(10),
  new DefinitionChangedError('x', { pinnedVersion: 1, currentVersion: 2, resumeStep: null, diff: null }),
  new PipelineError('x', 'INVALID_CURSOR'),
];

async function answer(err: unknown) {
  const app = new Hono();
  app.onError(problemHandler());
  app.get('/x', () => {
    throw err;
  });
  const res = await app.request('/x');
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('errors', () => {
  it.each(every.map((err) => [err.name, err.code, err] as const))('%s (%s) answers the status ERROR_CODES gives its code', async (_name, code, err) => {
    expect(err.status).toBe(ERROR_CODES[code].status);
    const { status, body } = await answer(err);
    expect([status, body.status, body.code]).toEqual([ERROR_CODES[code].status, ERROR_CODES[code].status, code]);
  });

  it("refuses an extra that would set one of the problem's own members", () => {
    for (const member of ['status', 'type', 'title', 'detail', 'code']) {
      expect(() => new PipelineError('x', 'JOB_FINISHED', { [member]: 'ABORTED' })).toThrow(new RegExp(`problem's own ${member}`));
    }
  });

  it("JOB_FINISHED carries the job's state as jobStatus; status stays the HTTP status (RFC 9457)", async () => {
    const { status, body } = await answer(new JobFinishedError('job-1', 'ABORTED', 'resume'));
    expect(status).toBe(409);
    expect(body).toMatchObject({ status: 409, code: 'JOB_FINISHED', jobStatus: 'ABORTED' });
  });

  it('selection errors are their own class, not re-drive refusals', async () => {
    const empty = new SelectionError('SELECTION_EMPTY', 'nothing to re-drive', { excluded: { REMOTE_OUTCOME_UNKNOWN: 1 } });
    expect(empty).not.toBeInstanceOf(RedriveRefusedError);
    expect((await answer(empty)).body).toMatchObject({ status: 422, code: 'SELECTION_EMPTY', excluded: { REMOTE_OUTCOME_UNKNOWN: 1 } });
  });
});

describe("the authors' error names", () => {
  it('NonRetryableError and UserActionRequiredError are exported, the old *Exception names are the same classes', async () => {
    const api = await import('./index');
    expect(api.NonRetryableException).toBe(api.NonRetryableError);
    expect(api.UserActionRequiredException).toBe(api.UserActionRequiredError);
    const err = new api.NonRetryableException('bad payload', 'BAD_PAYLOAD');
    expect([err instanceof api.NonRetryableError, err.name, err.code]).toEqual([true, 'NonRetryableError', 'BAD_PAYLOAD']);
    expect(new api.UserActionRequiredError('call the bank')).toBeInstanceOf(api.NonRetryableError);
  });
});

describe('errorLine', () => {
  it('says an Error as "Name: message", cut to the bound', () => {
    expect(errorLine(new TypeError('no such thing'))).toBe('TypeError: no such thing');
    expect(errorLine(new Error('x'.repeat(500)))).toHaveLength(300);
    expect(errorLine(new Error('x'.repeat(500)), undefined, 20)).toBe(`Error: ${'x'.repeat(13)}`);
  });
  it('says a thrown non-Error by the fallback, or as text, bounded too', () => {
    expect(errorLine('boom', 'start failed')).toBe('start failed');
    expect(errorLine({ toString: () => 'y'.repeat(400) })).toBe('y'.repeat(300));
  });
});

describe('errorMessage and causeChain', () => {
  it('says an Error by its message and anything else as text', () => {
    expect(errorMessage(new TypeError('no such thing'))).toBe('no such thing');
    expect(errorMessage(42)).toBe('42');
  });
  it('reads an error and its causes with their codes, up to the bound, and stops at a cause-less error', () => {
    const inner = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:7233'), { code: 14 });
    const outer = new Error('Failed to connect', { cause: inner });
    expect(causeChain(outer)).toEqual([
      { message: 'Failed to connect', code: undefined },
      { message: 'connect ECONNREFUSED 127.0.0.1:7233', code: 14 },
    ]);
    let deep: unknown = 'the bottom';
    for (let i = 0; i < 10; i++) deep = new Error(`level ${i}`, { cause: deep });
    expect(causeChain(deep).map((at) => at.message)).toEqual(['level 9', 'level 8', 'level 7', 'level 6', 'level 5']);
    expect(causeChain(deep, 20)).toHaveLength(11);
    expect(causeChain(undefined)).toEqual([]);
  });
});
