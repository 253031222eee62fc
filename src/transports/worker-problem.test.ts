/**
 * The wire contract as the transports apply it, against real HTTP and gRPC servers on
 * loopback: the headers and metadata every call carries, a worker's problem passed
 * through to the step's errorCode / errorMessage (bounded, reserved codes refused, its
 * retryability honoured), other error bodies ignored, in-progress on any status, and
 * what 2xx bodies become.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createHttp2Server } from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyFailure } from '../activities/step-failure';
import { createLog } from '../log';
import { callGrpc } from './grpc';
import { TransitionWorkerService } from './grpc-proto';
import { DeliveryUnconfirmedError, TransitionInProgressError, WorkerUnreachableError, type RemoteCallContext } from './remote';
import { callRest } from './rest';
import { MAX_DETAIL_CHARS, PROBLEM_CODE_METADATA, PROBLEM_METADATA, PROBLEM_RETRYABLE_METADATA } from './worker-problem';

const SECRET = 'PAYLOAD-SECRET-4111';
let http: Server;
let base = '';
let grpcServer: grpc.Server;
let address = '';
let lastHeaders: IncomingHttpHeaders = {};
let lastMetadata: Record<string, unknown> = {};

/** REST answers by path: [status, content-type, body, extra headers]. */
const ANSWERS: Record<string, [number, string | null, string, Record<string, string>?]> = {
  '/problem-422': [
    422,
    'application/problem+json',
    JSON.stringify({ type: 'about:blank', status: 422, code: 'TEMPLATE_MISSING', detail: 'template "inv-2" missing', retryable: false, input: SECRET }),
  ],
  '/problem-retryable-409': [409, 'application/problem+json; charset=utf-8', JSON.stringify({ code: 'LOCKED_BY_BATCH', detail: 'locked', retryable: true })],
  '/problem-503-final': [503, 'application/problem+json', JSON.stringify({ code: 'ACCOUNT_CLOSED', detail: 'closed for good', retryable: false })],
  '/problem-reserved': [422, 'application/problem+json', JSON.stringify({ code: 'REMOTE_OUTCOME_UNKNOWN', detail: 'pretending' })],
  '/problem-long': [422, 'application/problem+json', JSON.stringify({ code: 'lower_case', detail: `line one\nline two ${'x'.repeat(2000)}` })],
  '/plain-json-422': [422, 'application/json', JSON.stringify({ error: SECRET })],
  '/in-progress-202': [202, 'application/json', '{}', { 'x-transition-in-progress': 'true', 'retry-after': '2' }],
  '/empty-200': [200, null, ''],
  '/text-200': [200, 'text/plain', 'done'],
  '/json-as-text-200': [200, 'text/plain', '{"ok":true}'],
};

function context(): RemoteCallContext {
  return {
    tenantId: 'acme',
    executionId: 'inv-1',
    correlationId: 'corr-1',
    attempt: 2,
    transitionKey: 'inv-1:3:2',
    idempotencyKey: 'acme/inv-1:3:2',
    stepName: 'render',
    pipeline: 'invoices',
    signal: new AbortController().signal,
    log: createLog({ level: 'silent' }),
  };
}

async function failureOf(call: Promise<unknown>) {
  try {
    await call;
  } catch (err) {
    return { err, failure: classifyFailure(err) };
  }
  throw new Error('expected the call to fail');
}

beforeAll(async () => {
  http = createServer((req, res) => {
    lastHeaders = req.headers;
    req.resume();
    req.on('end', () => {
      // The request arrived whole; the connection drops before (or in the middle of) the answer.
      if (req.url === '/reset-before-answer') return req.socket.destroy();
      if (req.url === '/reset-mid-answer') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
        res.write('{"partial":');
        return setTimeout(() => req.socket.destroy(), 20);
      }
      const [status, type, body, extra] = ANSWERS[req.url!] ?? [404, null, ''];
      res.writeHead(status, { ...(type ? { 'content-type': type } : {}), ...extra }).end(body);
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(http.address() as { port: number }).port}`;

  grpcServer = new grpc.Server();
  grpcServer.addService(TransitionWorkerService, {
    Invoke(call: grpc.ServerUnaryCall<{ input_json: string }, unknown>, callback: grpc.sendUnaryData<unknown>) {
      lastMetadata = call.metadata.getMap();
      const mode = (JSON.parse(call.request.input_json) as { mode: string }).mode;
      const md = new grpc.Metadata();
      if (mode === 'problem') {
        md.set(PROBLEM_METADATA, 'true');
        md.set(PROBLEM_CODE_METADATA, 'TEMPLATE_MISSING');
        md.set(PROBLEM_RETRYABLE_METADATA, 'false');
        return callback({ code: grpc.status.FAILED_PRECONDITION, details: 'template "inv-2" missing', metadata: md });
      }
      if (mode === 'problem-retryable') {
        md.set(PROBLEM_METADATA, 'true');
        md.set(PROBLEM_RETRYABLE_METADATA, 'true');
        return callback({ code: grpc.status.ABORTED, details: 'conflict, try again', metadata: md });
      }
      if (mode === 'unmarked') return callback({ code: grpc.status.FAILED_PRECONDITION, details: SECRET });
      if (mode === 'unavailable') {
        md.set('x-transition-worker-platform', 'p');
        return callback({ code: grpc.status.UNAVAILABLE, details: 'busy', metadata: md });
      }
      callback(null, { output_json: '', platform: 'p' });
    },
    Lookup: (_call: unknown, callback: grpc.sendUnaryData<unknown>) => callback(null, { recorded: false }),
  });
  const port = await new Promise<number>((resolve, reject) =>
    grpcServer.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound))),
  );
  address = `127.0.0.1:${port}`;
});
afterAll(async () => {
  await new Promise((resolve) => http?.close(resolve));
  grpcServer?.forceShutdown();
});

describe('REST worker contract, as the transport applies it', () => {
  it('takes a connection dropped after the request went out as an unconfirmed delivery (redelivered, never a new attempt); a refused one as a retryable failure', async () => {
    for (const path of ['/reset-before-answer', '/reset-mid-answer']) {
      const { err, failure } = await failureOf(callRest(`${base}${path}`, { a: 1 }, 4000, context()));
      expect(err).toBeInstanceOf(DeliveryUnconfirmedError);
      expect(failure).toMatchObject({ inProgress: true, errorCode: 'DELIVERY_UNCONFIRMED', retryable: true });
    }
    // Nothing listens there: nothing reached a worker, so a new attempt is safe.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    const { err, failure } = await failureOf(callRest(`http://127.0.0.1:${port}/transition`, { a: 1 }, 4000, context()));
    expect(err).not.toBeInstanceOf(TransitionInProgressError);
    // Nothing was sent by this delivery: the engine fails the attempt only if none of the identity's was (sentOnce).
    expect(err).toBeInstanceOf(WorkerUnreachableError);
    expect(failure).toMatchObject({ errorCode: 'CONNECTION_REFUSED', retryable: true });
    expect(failure.inProgress).toBeUndefined();
  });

  it('sends the key, the transition identity, tenant, attempt, step, pipeline and deadline headers', async () => {
    await callRest(`${base}/empty-200`, { a: 1 }, 4000, context());
    expect(lastHeaders).toMatchObject({
      'idempotency-key': 'acme/inv-1:3:2',
      'x-transition-key': 'inv-1:3:2',
      'x-tenant-id': 'acme',
      'x-execution-id': 'inv-1',
      'x-correlation-id': 'corr-1',
      'x-transition-attempt': '2',
      'x-transition-step': 'render',
      'x-pipeline': 'invoices',
      'x-transition-deadline-ms': '4000',
      'content-type': 'application/json',
    });
  });

  it("passes a problem's code and detail through to the step, without the rest of its body", async () => {
    const { failure } = await failureOf(callRest(`${base}/problem-422`, {}, 4000, context()));
    expect(failure).toMatchObject({ retryable: false, errorCode: 'TEMPLATE_MISSING', terminalEffectStatus: 'FAILED_TERMINAL' });
    expect(failure.errorMessage).toBe(`REST worker at ${base}/problem-422 answered 422: template "inv-2" missing`);
    expect(failure.errorMessage).not.toContain(SECRET);
  });

  it("honours the problem's retryable over the status, both ways", async () => {
    expect((await failureOf(callRest(`${base}/problem-retryable-409`, {}, 4000, context()))).failure).toMatchObject({
      retryable: true,
      errorCode: 'LOCKED_BY_BATCH',
    });
    expect((await failureOf(callRest(`${base}/problem-503-final`, {}, 4000, context()))).failure).toMatchObject({
      retryable: false,
      errorCode: 'ACCOUNT_CLOSED',
    });
  });

  it('keeps HTTP_<status> for a code the service assigns itself or a malformed one, and bounds the detail to one line', async () => {
    expect((await failureOf(callRest(`${base}/problem-reserved`, {}, 4000, context()))).failure.errorCode).toBe('HTTP_422');
    const { failure } = await failureOf(callRest(`${base}/problem-long`, {}, 4000, context()));
    expect(failure.errorCode).toBe('HTTP_422');
    expect(failure.errorMessage).not.toContain('\n');
    const detail = failure.errorMessage.split(': ').slice(1).join(': ');
    expect(detail.length).toBe(MAX_DETAIL_CHARS);
  });

  it('ignores an error body that is not problem+json', async () => {
    const { failure } = await failureOf(callRest(`${base}/plain-json-422`, {}, 4000, context()));
    expect(failure).toMatchObject({ retryable: false, errorCode: 'HTTP_422', errorMessage: `REST worker at ${base}/plain-json-422 answered 422` });
  });

  it('takes X-Transition-In-Progress on a 2xx as in progress, with its Retry-After', async () => {
    const { err, failure } = await failureOf(callRest(`${base}/in-progress-202`, {}, 4000, context()));
    expect(err).toBeInstanceOf(TransitionInProgressError);
    expect(failure).toMatchObject({ inProgress: true, retryAfterMs: 2000 });
  });

  it('takes an empty 2xx body as null, any JSON 2xx whatever its Content-Type, and a non-JSON 2xx as INVALID_WORKER_RESPONSE', async () => {
    expect(await callRest(`${base}/empty-200`, {}, 4000, context())).toBeNull();
    expect(await callRest(`${base}/json-as-text-200`, {}, 4000, context())).toEqual({ ok: true });
    expect((await failureOf(callRest(`${base}/text-200`, {}, 4000, context()))).failure).toMatchObject({
      retryable: false,
      errorCode: 'INVALID_WORKER_RESPONSE',
    });
  });
});

describe('gRPC worker contract, as the transport applies it', () => {
  it('takes a call whose server went away after taking it as an unconfirmed delivery; a refused connection as a retryable failure', async () => {
    // A server that shuts down while the call is in its handler (CANCELLED "Call cancelled", no status of its own).
    const dying = new grpc.Server();
    dying.addService(TransitionWorkerService, {
      Invoke: () => setTimeout(() => dying.forceShutdown(), 20),
      Lookup: (_call: unknown, callback: grpc.sendUnaryData<unknown>) => callback(null, { recorded: false }),
    });
    const dyingPort = await new Promise<number>((resolve, reject) =>
      dying.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound))),
    );
    // A raw HTTP/2 server whose connection drops once the call's stream arrived (a worker process dying mid-call).
    const h2 = createHttp2Server();
    h2.on('stream', (stream) => stream.session?.destroy());
    await new Promise<void>((resolve) => h2.listen(0, '127.0.0.1', resolve));
    for (const target of [`127.0.0.1:${dyingPort}`, `127.0.0.1:${(h2.address() as { port: number }).port}`]) {
      const { err, failure } = await failureOf(callGrpc(target, { mode: 'x' }, 4000, context()));
      expect(err, target).toBeInstanceOf(DeliveryUnconfirmedError);
      expect(failure).toMatchObject({ inProgress: true, errorCode: 'DELIVERY_UNCONFIRMED', retryable: true });
    }
    await new Promise((resolve) => h2.close(resolve));
    // Now nothing listens at the dying server's port: nothing was sent.
    const { err, failure } = await failureOf(callGrpc(`127.0.0.1:${dyingPort}`, { mode: 'x' }, 4000, context()));
    expect(err).not.toBeInstanceOf(TransitionInProgressError);
    expect(err).toBeInstanceOf(WorkerUnreachableError);
    expect(failure).toMatchObject({ errorCode: 'GRPC_UNAVAILABLE', retryable: true });
    expect(failure.inProgress).toBeUndefined();
    // The worker's own UNAVAILABLE (it sent metadata) is its answer, not an unreachable worker.
    const answered = await failureOf(callGrpc(address, { mode: 'unavailable' }, 4000, context()));
    expect(answered.err).not.toBeInstanceOf(WorkerUnreachableError);
    expect(answered.failure).toMatchObject({ errorCode: 'GRPC_UNAVAILABLE', retryable: true });
  });

  it('sends the same identity, attempt, step and deadline as metadata', async () => {
    expect(await callGrpc(address, { mode: 'ok' }, 4000, context())).toBeNull();
    expect(lastMetadata).toMatchObject({
      'idempotency-key': 'acme/inv-1:3:2',
      'x-transition-key': 'inv-1:3:2',
      'x-tenant-id': 'acme',
      'x-transition-attempt': '2',
      'x-transition-step': 'render',
      'x-transition-deadline-ms': '4000',
    });
  });

  it('passes a marked problem through: code, details as the detail, retryable', async () => {
    const { failure } = await failureOf(callGrpc(address, { mode: 'problem' }, 4000, context()));
    expect(failure).toMatchObject({
      retryable: false,
      errorCode: 'TEMPLATE_MISSING',
      errorMessage: `gRPC worker at ${address} answered FAILED_PRECONDITION: template "inv-2" missing`,
    });
    expect((await failureOf(callGrpc(address, { mode: 'problem-retryable' }, 4000, context()))).failure).toMatchObject({
      retryable: true,
      errorCode: 'GRPC_ABORTED',
    });
  });

  it('ignores the details of an error not marked as a problem', async () => {
    const { failure } = await failureOf(callGrpc(address, { mode: 'unmarked' }, 4000, context()));
    expect(failure).toMatchObject({ retryable: false, errorCode: 'GRPC_FAILED_PRECONDITION' });
    expect(failure.errorMessage).not.toContain(SECRET);
  });
});
