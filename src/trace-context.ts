/**
 * Trace context across process boundaries, on the OpenTelemetry API only (no SDK), so the
 * transports and the worker kit can use it without loading the tracing SDK: inject the
 * active context into an outgoing call, continue a caller's trace around a handler, and
 * HTTP server spans. All of it is a no-op until a tracer provider is registered
 * (`startTracing` in tracing.ts).
 */
import { context, propagation, SpanKind, SpanStatusCode, trace, type Attributes, type TextMapGetter } from '@opentelemetry/api';
import type { MiddlewareHandler } from 'hono';

const TRACER = 'pipeline-orchestrator';

/** Adds the active trace context (`traceparent`, `tracestate`) to an outgoing call; nothing when tracing is off. */
export function injectTraceContext(set: (key: string, value: string) => void): void {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  for (const [key, value] of Object.entries(carrier)) set(key, value);
}

/** The active trace context as a plain carrier to store (a dispatch row), or undefined when there is none. */
export function traceCarrier(): Record<string, string> | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return Object.keys(carrier).length > 0 ? carrier : undefined;
}

/** Runs `fn` in the trace context stored in `carrier` (a run the sweeper starts later joins its request's trace). */
export function withTraceCarrier<T>(carrier: Record<string, string> | undefined, fn: () => Promise<T>): Promise<T> {
  if (!carrier) return fn();
  return context.with(propagation.extract(context.active(), carrier), fn);
}

/** Runs `fn` in a span continuing the caller's trace (read from its headers or metadata through `get`). */
export async function withRemoteParent<T>(name: string, get: (key: string) => string | undefined, attributes: Attributes, fn: () => Promise<T>): Promise<T> {
  const getter: TextMapGetter<undefined> = { get: (_carrier, key) => get(key), keys: () => ['traceparent', 'tracestate'] };
  const parent = propagation.extract(context.active(), undefined, getter);
  return trace.getTracer(TRACER).startActiveSpan(name, { kind: SpanKind.SERVER, attributes }, parent, async (span) => {
    try {
      return await fn();
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.name : 'error' });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** HTTP server spans for the API: `HTTP POST /pipeline/api/tenants/:tenantId/executions`, continuing an incoming traceparent. */
export function httpTracing(): MiddlewareHandler {
  return async (c, next) => {
    const method = c.req.method;
    await withRemoteParent(
      `HTTP ${method}`,
      (key) => c.req.header(key),
      { 'http.request.method': method },
      async () => {
        const span = trace.getActiveSpan();
        try {
          await next();
        } finally {
          span?.updateName(`HTTP ${method} ${c.req.routePath}`);
          span?.setAttributes({ 'http.route': c.req.routePath, 'http.response.status_code': c.res.status });
          if (c.res.status >= 500) span?.setStatus({ code: SpanStatusCode.ERROR });
        }
      },
    );
  };
}
