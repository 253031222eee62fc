/**
 * The Hono app: the submit API under /{prefix}/api, the admin API under
 * /{prefix}/admin, health at /healthz. Every route validates its path ids, query and
 * body before touching anything.
 */
import { Hono } from 'hono';
import type { Config } from '../config/config';
import { ExecutionNotFoundError, ForbiddenError } from '../errors';
import type { Log } from '../log';
import { triage } from '../service/triage';
import type { Metrics } from '../metrics';
import type { PipelineRegistry } from '../pipeline/registry';
import { dispositionEvidence } from '../service/disposition';
import type { CheckpointPublisher } from '../service/checkpoints';
import type { ExecutionService } from '../service/executions';
import type { RedriveService } from '../service/redrive';
import type { ForkService } from '../repair/fork';
import { executionFixture } from '../repair/fixture';
import type { HistoryStore } from '../store/history-store';
import type { DlqStore } from '../store/dlq-store';
import type { EffectStore } from '../store/effect-store';
import type { ExecutionStore } from '../store/execution-store';
import type { RejectStore } from '../store/reject-store';
import { fleetRoutes, isJobCreate, MAX_JOB_BODY_BYTES, type FleetDeps } from './fleet-routes';
import { pipelineRoutes } from './pipeline-routes';
import { resultRoutes } from './result-routes';
import type { DefinitionStore } from '../store/definition-store';
import type { SignalsStore } from '../store/signals-store';
import { bearerAuth, type AuthEnv } from './middleware/bearer-auth';
import type { Readiness } from '../service/readiness';
import { mountDocs } from './docs-page';
import { mountHealth } from './health';
import type { AesGcmCodec } from '../temporal/codec';
import { codecRoutes } from './codec-routes';
import { httpTracing } from '../trace-context';
import { createOpenApiDocument } from './openapi';
import { mount } from './mount';
import { problem, problemHandler } from './problem';
import { decodeCursor, encodeCursor, isIsoTimestamp, isRowId, MAX_BODY_BYTES } from './request';
import { bodyLimits } from './middleware/body-limits';
import { isValidId } from '../ids';
import { allowedMethods } from './method-not-allowed';
import { effectView, existingExecutionView, recordView } from './views';

export interface AppDeps {
  config: Config;
  log: Log;
  store: ExecutionStore;
  effects: EffectStore;
  dlq: DlqStore;
  definitions: DefinitionStore;
  executions: ExecutionService;
  redrive: RedriveService;
  /** fork: a new execution from a step of another; absent: no fork route */
  forks?: ForkService;
  /** the fixture route reads the execution's story here; absent: no fixture route */
  history?: HistoryStore;
  registry: PipelineRegistry;
  rejects: RejectStore;
  signals: SignalsStore;
  checkpoints: CheckpointPublisher;
  /** absent: no /metrics route */
  metrics?: Metrics;
  /** failure groups, execution history, bulk re-drive jobs */
  fleet?: FleetDeps;
  /** absent: no /readyz route */
  readiness?: Readiness;
  /** HTTP server spans (tracing is on) */
  tracing?: boolean;
  /** the payload codec (pipeline.codec.keys); absent: no /codec routes */
  codec?: AesGcmCodec;
}

export function createApp(deps: AppDeps) {
  const { config, log } = deps;
  const prefix = `/${config['pipeline.admin.prefix']}`;
  const tokens = config['pipeline.auth.tokens'];
  const app = new Hono<AuthEnv>();
  if (deps.tracing) app.use('*', httpTracing());
  app.onError(problemHandler(log));
  app.notFound((c) => {
    const allow = allowedMethods(app, c.req.path);
    // No route at all, or the route for this very method answered "not found" itself (an unknown asset).
    if (allow.length === 0 || allow.includes(c.req.method)) return problem(c, 'ROUTE_NOT_FOUND', `no route for ${c.req.method} ${c.req.path}`);
    return problem(c, 'METHOD_NOT_ALLOWED', `${c.req.path} answers ${allow.join(', ')}, not ${c.req.method}`, {}, { allow: allow.join(', ') });
  });

  mountHealth(app, { ...deps, metricsTokenSha256: config['pipeline.metrics.token-sha256'], log });

  const api = new Hono<AuthEnv>();
  // Auth first (401/403 before anything is read), then the body limits while it streams in.
  const limits = bodyLimits({ maxBytes: MAX_BODY_BYTES, readTimeoutMs: config['pipeline.server.body-read-timeout'] });
  api.use('/tenants/:tenantId/*', bearerAuth({ tokens, role: 'submit', log }), limits);
  mount(
    api,
    'POST /api/tenants/{tenantId}/executions',
    async (c, { params, body }, answer) => {
      const outcome = await deps.executions.start(params.tenantId, body);
      // A repeated executionKey: an admin token sees the record, a submit token only that it exists.
      if (!outcome.created && c.get('principal').role !== 'admin') return answer(200, existingExecutionView(outcome.record));
      const view = { ...recordView(outcome.record), dispatch: outcome.dispatch, runId: outcome.runId ?? outcome.record.runId };
      return outcome.created ? answer(202, view) : answer(200, view);
    },
    { base: '/api' },
  );

  // The one route that answers payload data (the final output): its own file, never logged.
  api.route('/', resultRoutes({ store: deps.store }));

  mount(
    api,
    'POST /api/tenants/{tenantId}/checkpoints',
    async (_c, { params, body }, answer) => {
      const outcome = await deps.checkpoints.publish(params.tenantId, body);
      return answer(outcome.duplicate ? 200 : 202, outcome);
    },
    { base: '/api' },
  );

  const admin = new Hono<AuthEnv>();
  const jobLimits = bodyLimits({ maxBytes: MAX_JOB_BODY_BYTES, readTimeoutMs: config['pipeline.server.body-read-timeout'] });
  admin.use('/tenants/:tenantId/*', bearerAuth({ tokens, role: 'admin', log }), (c, next) =>
    (isJobCreate(c.req.method, c.req.path) ? jobLimits : limits)(c, next),
  );

  const onAdmin = { base: '/admin' };
  mount(
    admin,
    'GET /admin/tenants/{tenantId}/executions',
    async (_c, { params: { tenantId }, query }, answer) => {
      const after = decodeCursor(
        query.cursor,
        (v): v is { createdAt: string; executionId: string } => isIsoTimestamp(v?.createdAt) && typeof v?.executionId === 'string' && isValidId(v.executionId),
      );
      const page = await deps.store.list(tenantId, { status: query.status, limit: query.limit, after });
      const last = page.records.at(-1);
      return answer(200, {
        items: page.records.map(recordView),
        nextCursor: page.more && last ? encodeCursor({ createdAt: last.createdAt, executionId: last.executionId }) : null,
      });
    },
    onAdmin,
  );

  mount(
    admin,
    'GET /admin/tenants/{tenantId}/executions/{executionId}',
    async (_c, { params: { tenantId, executionId } }, answer) => {
      const record = await deps.store.get(tenantId, executionId);
      if (!record) throw new ExecutionNotFoundError(tenantId, executionId);
      const [disposition, pendingStart] = await Promise.all([
        dispositionEvidence(record, deps.registry),
        record.status === 'QUEUED' ? deps.store.pendingStart(tenantId, executionId, 'queued-for') : null,
      ]);
      return answer(200, { ...recordView(record), ...(disposition && { disposition }), ...(pendingStart && { pendingStart }) });
    },
    onAdmin,
  );

  mount(
    admin,
    'GET /admin/tenants/{tenantId}/executions/{executionId}/effects',
    async (_c, { params: { tenantId, executionId } }, answer) => {
      const record = await deps.store.get(tenantId, executionId);
      if (!record) throw new ExecutionNotFoundError(tenantId, executionId);
      return answer(200, { items: (await deps.effects.list(tenantId, executionId)).map(effectView) });
    },
    onAdmin,
  );

  mount(
    admin,
    'POST /admin/tenants/{tenantId}/executions/{executionId}/redrive',
    async (c, { params: { tenantId, executionId }, query, body }, answer) => {
      const caller = c.get('principal');
      if (query.dryRun === 'true') return answer(200, await deps.redrive.preview(tenantId, executionId, body, undefined, caller));
      return answer(202, await deps.redrive.redrive(tenantId, executionId, body, caller.name, { caller }));
    },
    onAdmin,
  );

  const forks = deps.forks;
  if (forks)
    mount(
      admin,
      'POST /admin/tenants/{tenantId}/executions/{executionId}/fork',
      async (c, { params: { tenantId, executionId }, query, body }, answer) => {
        const caller = c.get('principal');
        if (query.dryRun === 'true' || body.dryRun === true) return answer(200, await forks.preview(tenantId, executionId, body, caller));
        return answer(202, await forks.fork(tenantId, executionId, body, caller));
      },
      onAdmin,
    );

  const history = deps.history;
  if (history)
    mount(
      admin,
      'GET /admin/tenants/{tenantId}/executions/{executionId}/fixture',
      async (c, { params: { tenantId, executionId } }, answer) => {
        const record = await deps.store.get(tenantId, executionId);
        if (!record) throw new ExecutionNotFoundError(tenantId, executionId);
        c.header('Cache-Control', 'no-store');
        return answer(200, await executionFixture(record, c.get('principal'), { history, registry: deps.registry, codec: deps.codec }));
      },
      onAdmin,
    );

  mount(
    admin,
    'GET /admin/tenants/{tenantId}/rejects',
    async (_c, { params: { tenantId }, query }, answer) => {
      const before = decodeCursor(query.cursor, (v): v is { before: number } => isRowId(v?.before));
      const page = await deps.rejects.list(tenantId, { limit: query.limit, before: before?.before });
      const last = page.items.at(-1);
      return answer(200, { items: page.items, nextCursor: page.more && last ? encodeCursor({ before: last.id }) : null });
    },
    onAdmin,
  );

  mount(
    admin,
    'GET /admin/tenants/{tenantId}/triage',
    async (_c, { params: { tenantId }, query }, answer) => answer(200, await triage(deps.signals, query.window, tenantId)),
    onAdmin,
  );

  mount(
    admin,
    'GET /admin/tenants/{tenantId}/dlq',
    async (_c, { params: { tenantId }, query }, answer) => {
      const before = decodeCursor(query.cursor, (v): v is { before: number } => isRowId(v?.before));
      const page = await deps.dlq.list(tenantId, {
        terminalReason: query.terminalReason,
        errorCode: query.errorCode,
        limit: query.limit,
        before: before?.before,
      });
      const last = page.entries.at(-1);
      return answer(200, { items: page.entries, nextCursor: page.more && last ? encodeCursor({ before: last.id }) : null });
    },
    onAdmin,
  );

  if (deps.fleet) admin.route('/', fleetRoutes(deps.fleet));
  admin.route('/', pipelineRoutes({ registry: deps.registry, definitions: deps.definitions }));

  const document = createOpenApiDocument(config['pipeline.admin.prefix']);
  mountDocs(app, prefix, document, config['pipeline.admin.docs-require-token'] ? bearerAuth({ tokens, role: 'submit', log }) : undefined);

  // Cross-tenant triage: admin tokens without a tenant allow-list only.
  mount(app, 'GET /admin/triage', async (_c, { query }, answer) => answer(200, await triage(deps.signals, query.window)), {
    prefix,
    before: [
      bearerAuth({ tokens, role: 'admin', log }),
      async (c, next) => {
        if (c.get('principal').tenants)
          throw new ForbiddenError('cross-tenant triage needs a token without a tenant allow-list; use /admin/tenants/{tenantId}/triage');
        await next();
      },
    ],
  });

  if (deps.codec) {
    app.route(
      '/codec',
      codecRoutes({
        codec: deps.codec,
        tokens,
        origins: config['pipeline.codec.cors-origins'],
        bodyReadTimeoutMs: config['pipeline.server.body-read-timeout'],
        log,
      }),
    );
  }
  app.route(`${prefix}/api`, api);
  app.route(`${prefix}/admin`, admin);
  return app;
}
