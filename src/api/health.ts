/**
 * The routes every role serves: `/healthz` (liveness: the process answers), `/readyz`
 * (readiness: its dependencies answer; 503 naming what is down) and `/metrics`.
 * The worker role serves only these.
 */
import { Hono } from 'hono';
import type { Log } from '../log';
import type { Metrics } from '../metrics';
import type { Readiness } from '../service/readiness';
import { bearerAuth } from './middleware/bearer-auth';
import { PipelineError } from '../errors';
import { problem, problemHandler } from './problem';
import { mount } from './mount';

export interface HealthDeps {
  readiness?: Readiness;
  /** absent: no /metrics route */
  metrics?: Metrics;
  /** pipeline.metrics.token-sha256: when set, /metrics takes that bearer token and no other */
  metricsTokenSha256?: string;
  log?: Log;
}

export function mountHealth(app: Hono<any>, deps: HealthDeps): void {
  mount(app, 'GET /healthz', (_c, _inputs, answer) => answer(200, { status: 'ok' }));
  const readiness = deps.readiness;
  if (readiness) {
    mount(app, 'GET /readyz', async (_c, _inputs, answer) => {
      const report = await readiness.check();
      if (report.ready) return answer(200, { status: 'ready', checks: report.checks });
      const down = [...Object.keys(report.errors)].join(', ');
      throw new PipelineError(`not ready: ${down}`, 'NOT_READY', { checks: report.checks, errors: report.errors });
    });
  }
  if (deps.metrics) {
    const registry = deps.metrics.registry;
    if (deps.metricsTokenSha256)
      app.use('/metrics', bearerAuth({ tokens: [{ sha256: deps.metricsTokenSha256, role: 'submit', name: 'metrics' }], role: 'submit', log: deps.log }));
    app.get('/metrics', async (c) => c.body(await registry.metrics(), 200, { 'content-type': registry.contentType }));
  }
}

/** The worker role's whole HTTP surface. */
export function createHealthApp(deps: HealthDeps & { log: Log }) {
  const app = new Hono();
  app.onError(problemHandler(deps.log));
  app.notFound((c) =>
    problem(c, 'ROUTE_NOT_FOUND', `no route for ${c.req.method} ${c.req.path} (this process runs the worker role: /healthz, /readyz, /metrics only)`),
  );
  mountHealth(app, deps);
  return app;
}

/**
 * What the port answers while the service starts (before the API is ready): /healthz 200,
 * /readyz and every other route 503 NOT_READY saying what start-up waits for, e.g. a Temporal
 * that is not up yet. An orchestrator's readiness probe sees "not ready", not "connection refused".
 */
export function createStartingApp(state: () => string) {
  const app = new Hono();
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.all('*', (c) => problem(c, 'NOT_READY', `starting: ${state()}`, { checks: { startup: 'down' }, errors: { startup: state() } }));
  return app;
}
