/**
 * The transition-worker kit for REST: a Hono app a developer gives a handler to, which
 * dedupes deliveries by their tenant-qualified idempotency key (`Idempotency-Key`:
 * `{tenantId}/{executionId}:{stepIndex}:{attempt}`) in Postgres. A repeated
 * key gets the stored response and never runs the handler twice, even when two copies
 * arrive at once (the second waits for the first). It reports its platform on every
 * response and answers, for operators, whether it recorded a given identity.
 *
 *   POST /transition            the step call (JSON in, JSON out)
 *   GET  /transition/{key}      { recorded, state, completedAt, legacy } for disposition checks
 *                               (the key URL-encoded: `acme%2Forder-1%3A3%3A1`)
 */
import { Hono } from 'hono';
import { DedupeStore, type AbandonedClaims, type StoredResponse } from './dedupe-store.js';
import { Deliveries, type DeliveryLimits } from './delivery.js';
import type { KitLog as Log, Queryable } from './ports.js';
import { IN_PROGRESS_HEADER, parseIdempotencyKey, PLATFORM_HEADER, PROBLEM_MEDIA_TYPE } from './protocol.js';
import { withRemoteParent } from './trace-context.js';

export { LeaseLostError, TransitionRejectedError, TransitionRetryableError } from './delivery.js';

export interface TransitionCall {
  /** the key the kit dedupes on: `{tenantId}/{executionId}:{stepIndex}:{attempt}`; send it to anything the handler calls */
  idempotencyKey: string;
  /** the spec's transition identity `executionId:stepIndex:attempt` (unique within the tenant only) */
  transitionKey: string;
  /** read from the idempotency key */
  tenantId: string;
  executionId: string;
  correlationId: string | null;
  /** the attempt, read from the transition identity */
  attempt: number;
  /** the step's name (`X-Transition-Step`); null when the caller did not send one */
  stepName: string | null;
  /** the pipeline's name (`X-Pipeline`); null when the caller did not send one */
  pipeline: string | null;
  /** the caller's deadline for this call, ms from sending (`X-Transition-Deadline-Ms`); null when absent or not a positive whole number */
  deadlineMs: number | null;
  /**
   * When the caller gives up (`Date.now()` on receipt + deadlineMs; null without a deadline):
   * past it the service parks the execution as REMOTE_OUTCOME_UNKNOWN. Finish, or record the
   * outcome anyway, before it (docs/transition-workers.md, "Deadlines").
   */
  deadlineAt: number | null;
  /** the caller's W3C trace context (`traceparent`); null when tracing is off or the value is malformed */
  traceparent: string | null;
  /**
   * Aborted (with a LeaseLostError) when this delivery's claim on the identity is lost, which
   * happens only with `abandonedClaims: 'run-again'`: its lease could not be renewed in time,
   * or a later delivery took it over and may run the handler too. Stop making effects;
   * whatever this delivery returns afterwards is not stored.
   */
  signal: AbortSignal;
}

/** Options both kits take about their dedupe. */
export interface KitDeliveryOptions {
  /** how long a claim holds without renewal before it counts as abandoned (its holder died); default 60 s */
  leaseMs?: number;
  /**
   * What a delivery does with an abandoned claim (IN_PROGRESS, lease run out: the worker died
   * after starting the handler, perhaps after it made its effect). 'park' (default): never run
   * it again; answer "in progress", so the service parks the execution REMOTE_OUTCOME_UNKNOWN
   * for an operator, and the lookup says ABANDONED. 'run-again': take the claim over and run
   * the handler again under the same key (only for handlers that pass `idempotencyKey` to
   * everything they call).
   */
  abandonedClaims?: AbandonedClaims;
  /** how long a concurrent duplicate waits for the first delivery's outcome; default 10 s */
  duplicateWaitMs?: number;
  /** where the kit logs `worker_kit_claim_abandoned`, `worker_kit_lease_expired`, `worker_kit_lease_lost` and `worker_kit_outcome_fenced` (one JSON object per line); default none */
  log?: Log;
}

/** The kit's dedupe limits from its options, with their defaults. */
export function deliveryLimits(options: KitDeliveryOptions): DeliveryLimits {
  return { leaseMs: options.leaseMs ?? 60_000, waitMs: options.duplicateWaitMs ?? 10_000, abandonedClaims: options.abandonedClaims ?? 'park' };
}

const TRACEPARENT = /^(?!ff)[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * The TransitionCall of a delivery, read from its headers (REST) or metadata (gRPC), which
 * carry the same lower-case names; null when `idempotency-key` is not a tenant-qualified key.
 * Ids, tenant and attempt come from the key; the rest is what the caller sent, checked for shape.
 */
export function transitionCallOf(header: (name: string) => string | null | undefined, receivedAt = Date.now()): Omit<TransitionCall, 'signal'> | null {
  const key = header('idempotency-key') ?? '';
  const parsed = parseIdempotencyKey(key);
  if (!parsed) return null;
  const text = (name: string) => header(name) || null;
  const deadline = text('x-transition-deadline-ms');
  const deadlineMs = deadline !== null && /^\d{1,15}$/.test(deadline) && Number(deadline) > 0 ? Number(deadline) : null;
  const traceparent = text('traceparent');
  return {
    idempotencyKey: key,
    transitionKey: parsed.transitionKey,
    tenantId: parsed.tenantId,
    executionId: parsed.executionId,
    correlationId: text('x-correlation-id'),
    attempt: parsed.attempt,
    stepName: text('x-transition-step'),
    pipeline: text('x-pipeline'),
    deadlineMs,
    deadlineAt: deadlineMs === null ? null : receivedAt + deadlineMs,
    traceparent: traceparent !== null && TRACEPARENT.test(traceparent) ? traceparent : null,
  };
}

export interface RestTransitionWorkerOptions extends KitDeliveryOptions {
  db: Queryable;
  /** reported in the X-Transition-Worker-Platform header, and from there in DLQ envelopes */
  platform: string;
  handler: (input: unknown, call: TransitionCall) => Promise<unknown>;
}

/** The contract's error body (RFC 9457 problem+json with `code`, `detail`, `retryable`). */
function problem(status: number, detail: string, retryable: boolean, code?: string, headers: Record<string, string> = {}): Response {
  const body = { type: 'about:blank', status, detail, retryable, ...(code ? { code } : {}) };
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': PROBLEM_MEDIA_TYPE, ...headers } });
}

export function createRestTransitionWorker(options: RestTransitionWorkerOptions) {
  if (!options.platform) throw new TypeError('createRestTransitionWorker: platform is required');
  const store = new DedupeStore(options.db);
  const deliveries = new Deliveries(store, deliveryLimits(options), options.log);
  const app = new Hono();

  app.use('*', async (c, next) => {
    await next();
    c.res.headers.set(PLATFORM_HEADER, options.platform);
  });

  const reply = (stored: StoredResponse, replayed: boolean) => {
    const headers: Record<string, string> = replayed ? { 'idempotent-replayed': 'true' } : {};
    if (stored.status < 400)
      return new Response(JSON.stringify(stored.body ?? null), { status: stored.status, headers: { 'content-type': 'application/json', ...headers } });
    // A stored rejection: { error, code? } answered as the contract's problem, never retryable.
    const body = (stored.body ?? {}) as { error?: unknown; code?: unknown };
    const detail = typeof body.error === 'string' ? body.error : 'transition rejected';
    return problem(stored.status, detail, false, typeof body.code === 'string' ? body.code : undefined, headers);
  };

  app.post('/transition', async (c) => {
    const call = transitionCallOf((name) => c.req.header(name));
    if (!call)
      return problem(
        400,
        'Idempotency-Key must be a tenant-qualified transition identity {tenantId}/{executionId}:{stepIndex}:{attempt}',
        false,
        'INVALID_IDEMPOTENCY_KEY',
      );
    let input: unknown;
    try {
      input = await c.req.json();
    } catch {
      return problem(400, 'body must be JSON', false, 'INVALID_INPUT');
    }
    // The handler runs in a span continuing the orchestrator's trace (traceparent), when tracing is on.
    const handle = (signal: AbortSignal) =>
      withRemoteParent(
        'worker-kit REST handle',
        (name) => c.req.header(name),
        { 'pipeline.transition_key': call.transitionKey, 'pipeline.platform': options.platform },
        () => options.handler(input, { ...call, signal }),
      );
    const outcome = await deliveries.deliver(call.idempotencyKey, handle);
    if (outcome.kind === 'done') return reply(outcome.stored, outcome.replayed);
    if (outcome.kind === 'in-progress') {
      // Not a failure: the caller delivers the same identity again (the engine commits no new attempt).
      return problem(425, 'the same transition is still being handled; deliver it again later', true, undefined, {
        [IN_PROGRESS_HEADER]: 'true',
        'retry-after': String(Math.ceil(outcome.retryAfterMs / 1000)),
      });
    }
    return problem(503, outcome.problem?.detail ?? 'transition failed; retry', true, outcome.problem?.code);
  });

  app.get('/transition/:key', async (c) => {
    const key = c.req.param('key');
    if (!parseIdempotencyKey(key))
      return problem(400, 'not a tenant-qualified transition identity {tenantId}/{executionId}:{stepIndex}:{attempt}', false, 'INVALID_IDEMPOTENCY_KEY');
    let found: Awaited<ReturnType<DedupeStore['lookup']>>;
    try {
      found = await store.lookup(key);
    } catch {
      // The store cannot say: never "not recorded" by default.
      return problem(503, 'worker store unavailable; the disposition cannot be read now', true);
    }
    return c.json({
      idempotencyKey: key,
      recorded: found !== null,
      state: found?.state ?? null,
      completedAt: found?.completedAt ?? null,
      legacy: found?.legacy ?? false,
    });
  });

  return app;
}
