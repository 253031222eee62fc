/**
 * Continues the orchestrator's trace around a handler (W3C `traceparent` / `tracestate`),
 * on the OpenTelemetry API only: a no-op until the worker's process registers a tracer provider.
 */
import { context, propagation, SpanKind, SpanStatusCode, trace, type Attributes, type TextMapGetter } from '@opentelemetry/api';

const TRACER = '@pipeline-orchestrator/worker-kit';

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
