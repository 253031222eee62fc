/**
 * Tracing (OpenTelemetry). Off unless an OTLP endpoint is configured
 * (`pipeline.tracing.otlp-endpoint`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) or a span
 * processor is handed in (tests): then one execution is one trace, from the API's HTTP
 * span through Temporal's own interceptors (client start → workflow → each activity) to the
 * REST and gRPC transition workers, which receive `traceparent` and whose kit continues the
 * trace around the handler. Spans carry ids and names only, never payloads.
 *
 * Propagation helpers (API-only, for the transports and the worker kit) live in
 * `trace-context.ts`. When tracing is off nothing here is registered: the OpenTelemetry API is a no-op, the
 * Temporal interceptors are not installed, and no header is added to remote calls.
 */
import { createRequire } from 'node:module';
import { context, propagation, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { WorkerOptions } from '@temporalio/worker';

export const SERVICE_NAME = 'pipeline-orchestrator';

export interface Tracing {
  /** client interceptors for `new Client({ interceptors })` */
  client: { workflow: WorkflowClientInterceptor[] };
  /** worker options: interceptors (workflow module + activity) and the workflow span sink */
  worker: Pick<WorkerOptions, 'interceptors' | 'sinks'>;
  /** flushes and unregisters the global provider */
  shutdown(): Promise<void>;
}

/** Registers the global tracer provider and returns what the client and worker need; undefined when off. */
export function startTracing(options: { endpoint?: string; spanProcessor?: SpanProcessor }): Tracing | undefined {
  const processor = options.spanProcessor ?? (options.endpoint ? new BatchSpanProcessor(new OTLPTraceExporter({ url: options.endpoint })) : undefined);
  if (!processor) return undefined;
  const resource = new Resource({ 'service.name': SERVICE_NAME });
  const provider = new NodeTracerProvider({ resource, spanProcessors: [processor] });
  // AsyncLocalStorage context manager and the W3C traceparent/baggage propagators.
  provider.register();
  const require = createRequire(import.meta.url);
  return {
    client: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] },
    worker: {
      interceptors: {
        workflowModules: [require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors')],
        activity: [(ctx) => ({ inbound: new OpenTelemetryActivityInboundInterceptor(ctx), outbound: new OpenTelemetryActivityOutboundInterceptor(ctx) })],
      },
      sinks: { exporter: makeWorkflowExporter(processor, resource) },
    },
    async shutdown() {
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}
