/**
 * Tracing: one execution is one connected trace, from the start request (continuing the
 * caller's traceparent) through the client's start, the workflow, every step's activity,
 * to the worker kit's handler of the REST step and of the gRPC step. Spans are collected
 * in memory from the service's own tracer provider.
 */
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { ServerType } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boundPort, serveHttp } from '../../src/net';
import { deferredQueryable } from '../../src/store/db';
import { definePipeline, grpcStep, localStep, restStep } from '../../src/pipeline/define';
import { createGrpcTransitionWorker, createRestTransitionWorker, ensureDedupeSchema } from '@pipeline-orchestrator/worker-kit';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { until } from '../helpers/until';

const exporter = new InMemorySpanExporter();
let engine: TestEngine;
let restServer: ServerType;
let grpcKit: ReturnType<typeof createGrpcTransitionWorker>;

const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

beforeAll(async () => {
  // The kit workers listen first on port 0 (the pipeline names their addresses), on the engine's database once it is open.
  const { db, open } = deferredQueryable();
  const rest = createRestTransitionWorker({ db, platform: 'test-kit', handler: async (input) => input });
  restServer = await serveHttp({ fetch: rest.fetch, port: 0, hostname: '127.0.0.1', key: 'test.rest-port' });
  const restPort = boundPort(restServer);
  grpcKit = createGrpcTransitionWorker({ db, platform: 'test-kit', handler: async (input) => input });
  const grpcAddress = await grpcKit.listen(0);
  const pipeline = definePipeline({
    name: 'traced',
    steps: [
      localStep('prepare', (input: unknown) => input),
      restStep('notify', { url: `http://127.0.0.1:${restPort}/transition` }),
      grpcStep('archive', { address: grpcAddress }),
      localStep('finish', (input: unknown) => input),
    ],
  });
  engine = await startTestEngine([pipeline], {}, { spanProcessor: new SimpleSpanProcessor(exporter) });
  await ensureDedupeSchema(engine.service.db);
  open(engine.service.db);
});

afterAll(async () => {
  await new Promise((resolve) => restServer?.close(resolve));
  await grpcKit?.stop();
  await engine?.stop();
});

describe('tracing', () => {
  it('makes one execution one trace, from the start request to the kit handlers, every span linked to its parent', async () => {
    const res = await engine.request('POST', '/api/tenants/acme/executions', {
      body: { pipeline: 'traced', executionId: 'trace-1', input: { n: 1 } },
      headers: { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` },
    });
    expect(res.status).toBe(202);
    const record = await engine.waitFor('acme', 'trace-1', ['SUCCEEDED', 'FAILED']);
    expect(record.status).toBe('SUCCEEDED');

    const inTrace = () => exporter.getFinishedSpans().filter((span) => span.spanContext().traceId === CALLER_TRACE);
    // Workflow spans arrive through the worker's sink when the run completes.
    await until(() => inTrace().some((span) => span.name === 'RunWorkflow:pipelineWorkflow'), 30_000, 'the workflow span to be exported');
    const spans = inTrace();
    const named = (name: string) => spans.filter((span) => span.name === name);
    const one = (name: string): ReadableSpan => {
      const found = named(name);
      expect(found, `${name} in ${spans.map((s) => s.name).join(', ')}`).toHaveLength(1);
      return found[0];
    };
    const id = (span: ReadableSpan) => span.spanContext().spanId;

    const http = one('HTTP POST /pipeline/api/tenants/:tenantId/executions');
    expect(http.parentSpanId).toBe(CALLER_SPAN);
    const start = one('StartWorkflow:pipelineWorkflow');
    expect(start.parentSpanId).toBe(id(http));
    const run = one('RunWorkflow:pipelineWorkflow');
    expect(run.parentSpanId).toBe(id(start));

    const starts = spans.filter((span) => span.name.startsWith('StartActivity:'));
    const runs = spans.filter((span) => span.name.startsWith('RunActivity:'));
    expect(starts).toHaveLength(4);
    expect(runs).toHaveLength(4);
    for (const span of starts) expect(span.parentSpanId).toBe(id(run));
    for (const span of runs) expect(starts.map(id)).toContain(span.parentSpanId);

    const restHandle = one('worker-kit REST handle');
    const grpcHandle = one('worker-kit gRPC handle');
    expect(runs.map(id)).toContain(restHandle.parentSpanId);
    expect(runs.map(id)).toContain(grpcHandle.parentSpanId);
    expect(restHandle.parentSpanId).not.toBe(grpcHandle.parentSpanId);
    expect(restHandle.attributes['pipeline.transition_key']).toBe('trace-1:1:1');
    expect(grpcHandle.attributes['pipeline.transition_key']).toBe('trace-1:2:1');

    // Connected: every span but the HTTP one has its parent in the trace.
    const ids = new Set(spans.map(id));
    for (const span of spans) if (span !== http) expect(ids, span.name).toContain(span.parentSpanId);
    // No payload in any span attribute.
    expect(JSON.stringify(spans.map((span) => span.attributes))).not.toContain('"n":1');
  });

  it('keeps a run that the sweeper starts later (the start on the request failed) in the trace of its request', async () => {
    const trace = 'aaf92f3577b34da6a3ce929d0e0e4736';
    let refused = 0;
    engine.service.dispatcher.beforeStart = (_tenant, executionId) => {
      if (executionId === 'trace-swept' && refused++ === 0) throw new Error('Temporal unreachable (test)');
    };
    try {
      const res = await engine.request('POST', '/api/tenants/acme/executions', {
        body: { pipeline: 'traced', executionId: 'trace-swept', input: { n: 2 } },
        headers: { traceparent: `00-${trace}-${CALLER_SPAN}-01` },
      });
      expect(res.status).toBe(202);
      expect((await res.json()).dispatch).toBe('pending');
      expect((await engine.waitFor('acme', 'trace-swept', ['SUCCEEDED', 'FAILED'])).status).toBe('SUCCEEDED');
    } finally {
      engine.service.dispatcher.beforeStart = undefined;
    }
    expect(refused).toBeGreaterThanOrEqual(2);
    const inTrace = () => exporter.getFinishedSpans().filter((span) => span.spanContext().traceId === trace);
    await until(() => inTrace().some((span) => span.name === 'RunWorkflow:pipelineWorkflow'), 30_000, 'the workflow span of the swept run');
    const spans = inTrace();
    const http = spans.find((span) => span.name === 'HTTP POST /pipeline/api/tenants/:tenantId/executions')!;
    const starts = spans.filter((span) => span.name === 'StartWorkflow:pipelineWorkflow');
    expect(starts).toHaveLength(1);
    expect(starts[0].parentSpanId).toBe(http.spanContext().spanId);
    expect(spans.filter((span) => span.name.startsWith('worker-kit'))).toHaveLength(2);
  });
});
