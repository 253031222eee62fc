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
import { PLATFORM_HEADER } from '../transports/rest';
import { DedupeStore, type StoredResponse } from './dedupe-store';
import { Deliveries } from './delivery';
import { IN_PROGRESS_HEADER } from '../transports/remote';
import { parseIdempotencyKey } from '../ids';

export { LeaseLostError, TransitionRejectedError } from './delivery';
import type { Queryable } from '../store/db';
import type { Log } from '../log';
import { withRemoteParent } from '../trace-context';

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
  /**
   * Aborted (with a LeaseLostError) when this delivery's claim on the identity is lost: its
   * lease could not be renewed in time, or a later delivery took it over and may run the
   * handler too. Stop making effects; whatever this delivery returns afterwards is not stored.
   */
  signal: AbortSignal;
}

/** Options both kits take about their dedupe. */
export interface KitDeliveryOptions {
  /** how long a claim holds before another delivery may take it over (the worker died); default 60 s */
  leaseMs?: number;
  /** how long a concurrent duplicate waits for the first delivery's outcome; default 10 s */
  duplicateWaitMs?: number;
  /** where the kit logs `worker_kit_lease_lost` and `worker_kit_outcome_fenced` (one JSON object per line); default none */
  log?: Log;
}

/** The TransitionCall of a tenant-qualified idempotency key; null when `key` is not one. */
export function transitionCallOf(key: string, correlationId: string | null): Omit<TransitionCall, 'signal'> | null {
  const parsed = parseIdempotencyKey(key);
  if (!parsed) return null;
  return {
    idempotencyKey: key,
    transitionKey: parsed.transitionKey,
    tenantId: parsed.tenantId,
    executionId: parsed.executionId,
    correlationId,
    attempt: parsed.attempt,
  };
}

export interface RestTransitionWorkerOptions extends KitDeliveryOptions {
  db: Queryable;
  /** reported in the X-Transition-Worker-Platform header, and from there in DLQ envelopes */
  platform: string;
  handler: (input: unknown, call: TransitionCall) => Promise<unknown>;
}

export function createRestTransitionWorker(options: RestTransitionWorkerOptions) {
  if (!options.platform) throw new TypeError('createRestTransitionWorker: platform is required');
  const store = new DedupeStore(options.db);
  const deliveries = new Deliveries(store, { leaseMs: options.leaseMs ?? 60_000, waitMs: options.duplicateWaitMs ?? 10_000 }, options.log);
  const app = new Hono();

  app.use('*', async (c, next) => {
    await next();
    c.res.headers.set(PLATFORM_HEADER, options.platform);
  });

  const reply = (stored: StoredResponse, replayed: boolean) =>
    new Response(JSON.stringify(stored.body ?? null), {
      status: stored.status,
      headers: { 'content-type': 'application/json', ...(replayed ? { 'idempotent-replayed': 'true' } : {}) },
    });

  app.post('/transition', async (c) => {
    const key = c.req.header('idempotency-key') ?? '';
    const call = transitionCallOf(key, c.req.header('x-correlation-id') ?? null);
    if (!call) return c.json({ error: 'Idempotency-Key must be a tenant-qualified transition identity {tenantId}/{executionId}:{stepIndex}:{attempt}' }, 400);
    let input: unknown;
    try {
      input = await c.req.json();
    } catch {
      return c.json({ error: 'body must be JSON' }, 400);
    }
    // The handler runs in a span continuing the orchestrator's trace (traceparent), when tracing is on.
    const handle = (signal: AbortSignal) =>
      withRemoteParent(
        'worker-kit REST handle',
        (name) => c.req.header(name),
        { 'pipeline.transition_key': call.transitionKey, 'pipeline.platform': options.platform },
        () => options.handler(input, { ...call, signal }),
      );
    const outcome = await deliveries.deliver(key, handle);
    if (outcome.kind === 'done') return reply(outcome.stored, outcome.replayed);
    if (outcome.kind === 'in-progress') {
      // Not a failure: the caller delivers the same identity again (the engine commits no new attempt).
      c.header(IN_PROGRESS_HEADER, 'true');
      c.header('retry-after', String(Math.ceil(outcome.retryAfterMs / 1000)));
      return c.json({ error: 'the same transition is still being handled; deliver it again later' }, 425);
    }
    return c.json({ error: 'transition failed; retry' }, 503);
  });

  app.get('/transition/:key', async (c) => {
    const key = c.req.param('key');
    if (!parseIdempotencyKey(key)) return c.json({ error: 'not a tenant-qualified transition identity {tenantId}/{executionId}:{stepIndex}:{attempt}' }, 400);
    let found: Awaited<ReturnType<DedupeStore['lookup']>>;
    try {
      found = await store.lookup(key);
    } catch {
      // The store cannot say: never "not recorded" by default.
      return c.json({ error: 'worker store unavailable; the disposition cannot be read now' }, 503);
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
