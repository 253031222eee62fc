/**
 * A REST transition worker stand-in for engine tests, in the test's own process: it answers
 * `POST /transition` by calling a handler, the way a worker would (docs/transition-workers.md):
 * the handler's return value is the 200 JSON body; a `workerFailure(code, { retryable })` it
 * throws is a 503 (retryable) or 422 (not) with an `application/problem+json` body; any other
 * throw is a 503. The port is the OS's choice. It keeps no dedupe table: a test that needs
 * the worker kit's exactly-once behaviour runs the kit itself.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { RemoteFailureError } from '../transports/remote';

/** What the handler learns about the call, from its headers. */
export interface StubCall {
  idempotencyKey: string;
  tenantId: string;
  executionId: string;
  input: unknown;
}

export interface StubWorker {
  /** the URL to give the step: `http://127.0.0.1:<port>/transition` */
  url: string;
  /** every call received, in order */
  calls: StubCall[];
  stop(): Promise<void>;
}

async function body(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startStubWorker(handler: (input: any, call: StubCall) => unknown): Promise<StubWorker> {
  const calls: StubCall[] = [];
  const server = createServer((request, response) => {
    void (async () => {
      if (request.method !== 'POST' || request.url !== '/transition') {
        response.writeHead(404).end();
        return;
      }
      const text = await body(request);
      const call: StubCall = {
        idempotencyKey: String(request.headers['idempotency-key'] ?? ''),
        tenantId: String(request.headers['x-tenant-id'] ?? ''),
        executionId: String(request.headers['x-execution-id'] ?? ''),
        input: text === '' ? null : JSON.parse(text),
      };
      calls.push(call);
      try {
        const output = await handler(call.input, call);
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(output ?? null));
      } catch (err) {
        const failure = err instanceof RemoteFailureError ? err : undefined;
        const status = failure && !failure.retryable ? 422 : 503;
        const problem = {
          title: 'step failed',
          status,
          code: failure?.code ?? 'STUB_FAILURE',
          detail: failure?.message ?? 'the stub handler threw',
          retryable: status === 503,
        };
        response.writeHead(status, { 'content-type': 'application/problem+json' }).end(JSON.stringify(problem));
      }
    })().catch(() => response.writeHead(500).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/transition`,
    calls,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
