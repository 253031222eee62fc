/**
 * The disposition lookup's answers as the contract states them, against real loopback
 * servers: REST 200 {recorded} is the worker's word, 404 means "not recorded", any other
 * status or no answer is "unavailable"; gRPC NOT_FOUND means "not recorded" too.
 */
import { createServer, type Server } from 'node:http';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config/config';
import { grpcStep, restStep } from '../pipeline/define';
import { PipelineRegistry } from '../pipeline/registry';
import type { ExecutionRecord } from '../store/execution-store';
import { TransitionWorkerService } from '../transports/grpc-proto';
import { dispositionEvidence } from './disposition';

let http: Server;
let base = '';
let grpcServer: grpc.Server;
let grpcAddress = '';
const asked: string[] = [];

beforeAll(async () => {
  http = createServer((req, res) => {
    const key = decodeURIComponent(req.url!.split('/').pop()!);
    asked.push(key);
    if (req.url!.startsWith('/recorded/')) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ recorded: true, state: 'DONE' }));
    else if (req.url!.startsWith('/vague/')) res.writeHead(200, { 'content-type': 'application/json' }).end('{"state":"DONE"}');
    else if (req.url!.startsWith('/missing/')) res.writeHead(404, { 'content-type': 'application/problem+json' }).end('{"status":404}');
    else res.writeHead(500).end();
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(http.address() as { port: number }).port}`;
  grpcServer = new grpc.Server();
  grpcServer.addService(TransitionWorkerService, {
    Invoke: (_call: unknown, callback: grpc.sendUnaryData<unknown>) => callback({ code: grpc.status.UNIMPLEMENTED }),
    Lookup: (call: grpc.ServerUnaryCall<{ transition_key: string }, unknown>, callback: grpc.sendUnaryData<unknown>) =>
      call.request.transition_key.includes('gone')
        ? callback({ code: grpc.status.NOT_FOUND, details: 'no such key' })
        : callback({ code: grpc.status.INTERNAL, details: 'broken' }),
  });
  const port = await new Promise<number>((resolve, reject) =>
    grpcServer.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound))),
  );
  grpcAddress = `127.0.0.1:${port}`;
});
afterAll(async () => {
  await new Promise((resolve) => http?.close(resolve));
  grpcServer?.forceShutdown();
});

function parked(pipeline: string, executionId: string): ExecutionRecord {
  return {
    tenantId: 'acme',
    executionId,
    pipeline,
    pipelineVersion: 1,
    status: 'REMOTE_OUTCOME_UNKNOWN',
    failedStepIndex: 0,
    remoteCall: { transitionKey: `${executionId}:0:1`, protocol: 'REST', target: 'x', startedAt: new Date(0).toISOString(), deadlineMs: 1000, elapsedMs: 1000 },
  } as ExecutionRecord;
}

function registry() {
  const config = loadConfig({}, { 'pipeline.auth.tokens': [] });
  return new PipelineRegistry(config, [
    { name: 'recorded', steps: [restStep('call', { url: `${base}/t`, dispositionUrl: `${base}/recorded/{idempotencyKey}` })] },
    { name: 'missing', steps: [restStep('call', { url: `${base}/t`, dispositionUrl: `${base}/missing/{idempotencyKey}` })] },
    { name: 'vague', steps: [restStep('call', { url: `${base}/t`, dispositionUrl: `${base}/vague/{idempotencyKey}` })] },
    { name: 'broken', steps: [restStep('call', { url: `${base}/t`, dispositionUrl: `${base}/broken/{idempotencyKey}` })] },
    { name: 'grpc', steps: [grpcStep('call', { address: grpcAddress, lookup: true })] },
  ]);
}

describe('disposition lookup', () => {
  it('takes 200 {recorded: true} as the worker recorded the tenant-qualified key', async () => {
    const evidence = await dispositionEvidence(parked('recorded', 'e1'), registry());
    expect(evidence).toMatchObject({ lookup: 'ANSWERED', workerRecorded: true, workerState: 'DONE' });
    expect(asked).toContain('acme/e1:0:1');
  });

  it('takes a 404 as "not recorded", not as an unavailable lookup', async () => {
    expect(await dispositionEvidence(parked('missing', 'e2'), registry())).toMatchObject({ lookup: 'ANSWERED', workerRecorded: false, workerState: null });
  });

  it('keeps the worker\'s own "in progress" answers as evidence over a bare 404, which a wrong lookup URL would answer too', async () => {
    const record = parked('missing', 'e6');
    record.remoteCall = {
      ...record.remoteCall!,
      inProgress: {
        state: 'IN_PROGRESS',
        answers: 4,
        firstAt: new Date(0).toISOString(),
        lastAt: new Date(0).toISOString(),
        budgetMs: 300_000,
        platform: null,
      },
    } as NonNullable<ExecutionRecord['remoteCall']>;
    const evidence = await dispositionEvidence(record, registry());
    expect(evidence).toMatchObject({ lookup: 'ANSWERED', workerRecorded: true, workerState: 'IN_PROGRESS' });
    expect(evidence).not.toHaveProperty('notFound');
    const answered = parked('recorded', 'e7');
    answered.remoteCall = record.remoteCall;
    expect(await dispositionEvidence(answered, registry())).toMatchObject({ workerRecorded: true, workerState: 'DONE' });
  });

  it('takes a 500 as unavailable: no guess either way', async () => {
    const evidence = await dispositionEvidence(parked('broken', 'e3'), registry());
    expect(evidence).toMatchObject({ lookup: 'UNAVAILABLE', workerRecorded: null });
    expect(evidence?.detail).toContain('500');
  });

  it('takes a 200 without a boolean recorded as unavailable, not as "not recorded"', async () => {
    expect(await dispositionEvidence(parked('vague', 'e5'), registry())).toMatchObject({ lookup: 'UNAVAILABLE', workerRecorded: null });
  });

  it('takes gRPC NOT_FOUND as "not recorded" and other statuses as unavailable', async () => {
    expect(await dispositionEvidence(parked('grpc', 'gone'), registry())).toMatchObject({ lookup: 'ANSWERED', workerRecorded: false });
    expect(await dispositionEvidence(parked('grpc', 'e4'), registry())).toMatchObject({ lookup: 'UNAVAILABLE', workerRecorded: null });
  });
});
