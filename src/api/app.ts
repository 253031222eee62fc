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
import { PublishCheckpointRequest, RedriveRequest, StartExecutionRequest } from '../contract/requests';
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
import { createOpenApiDocument, declaredPath } from './openapi';
import { problem, problemHandler } from './problem';
import { decodeCursor, encodeCursor, isIsoTimestamp, isRowId, MAX_BODY_BYTES, pathId, readJson, readQuery } from './request';
import { bodyLimits } from './middleware/body-limits';
import { isValidId } from '../ids';
import { allowedMethods } from './method-not-allowed';
import { ListDlqQuery, ListExecutionsQuery, ListRejectsQuery, RedriveQuery, TriageQuery } from '../contract/parameters';
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
  api.post(declaredPath('post', '/api/tenants/{tenantId}/executions', '/api'), async (c) => {
    const tenantId = pathId(c, 'tenantId');
    const body = await readJson(c, StartExecutionRequest);
    const outcome = await deps.executions.start(tenantId, body);
    // A repeated executionKey: an admin token sees the record, a submit token only that it exists.
    if (!outcome.created && c.get('principal').role !== 'admin') return c.json(existingExecutionView(outcome.record), 200);
    return c.json({ ...recordView(outcome.record), dispatch: outcome.dispatch, runId: outcome.runId ?? outcome.record.runId }, outcome.created ? 202 : 200);
  });

  // The one route that answers payload data (the final output): its own file, never logged.
  api.route('/', resultRoutes({ store: deps.store }));

  api.post(declaredPath('post', '/api/tenants/{tenantId}/checkpoints', '/api'), async (c) => {
    const tenantId = pathId(c, 'tenantId');
    const body = await readJson(c, PublishCheckpointRequest);
    const outcome = await deps.checkpoints.publish(tenantId, body);
    return c.json(outcome, outcome.duplicate ? 200 : 202);
  });

  const admin = new Hono<AuthEnv>();
  const jobLimits = bodyLimits({ maxBytes: MAX_JOB_BODY_BYTES, readTimeoutMs: config['pipeline.server.body-read-timeout'] });
  admin.use('/tenants/:tenantId/*', bearerAuth({ tokens, role: 'admin', log }), (c, next) =>
    (isJobCreate(c.req.method, c.req.path) ? jobLimits : limits)(c, next),
  );

  admin.get(declaredPath('get', '/admin/tenants/{tenantId}/executions', '/admin'), async (c) => {
    const tenantId = pathId(c, 'tenantId');
    const query = readQuery(c, ListExecutionsQuery);
    const after = decodeCursor(
      query.cursor,
      (v): v is { createdAt: string; executionId: string } => isIsoTimestamp(v?.createdAt) && typeof v?.executionId === 'string' && isValidId(v.executionId),
    );
    const page = await deps.store.list(tenantId, { status: query.status, limit: query.limit, after });
    const last = page.records.at(-1);
    return c.json({
      items: page.records.map(recordView),
      nextCursor: page.more && last ? encodeCursor({ createdAt: last.createdAt, executionId: last.executionId }) : null,
    });
  });

  admin.get(declaredPath('get', '/admin/tenants/{tenantId}/executions/{executionId}', '/admin'), async (c) => {
    const tenantId = pathId(c, 'tenantId');
    const executionId = pathId(c, 'executionId');
    const record = await deps.store.get(tenantId, executionId);
    if (!record) throw new ExecutionNotFoundError(tenantId, executionId);
    const [disposition, pendingStart] = await Promise.all([
      dispositionEvidence(record, deps.registry),
      record.status === 'QUEUED' ? deps.store.pendingStart(tenantId, executionId, 'queued-for') : null,
    ]);
    return c.json({ ...recordView(record), ...(disposition && { disposition }), ...(pendingStart && { pendingStart }) });
  });

  admin.get(declaredPath('get', '/admin/tenants/{tenantId}/executions/{executionId}/effects', '/admin'), async (c) => {
    const tenantId = pathId(c, 'tenantId');
    const executionId = pathId(c, 'executionId');
    const record = await deps.store.get(tenantId, executionId);
    if (!record) throw new ExecutionNotFoundError(tenantId, executionId);
    return c.json({ items: (await deps.effects.list(tenantId, executionId)).map(effectView) });
  });

  admin.post(declaredPath('post', '/admin/tenants/{tenantId}/executions/{executionId}/redrive', '/admin'), async (c) => {
    const query = readQuery(c, RedriveQuery);
    const body = await readJson(c, RedriveRequest);
    const tenantId = pathId(c, 'tenantId');
    const executionId = pathId(c, 'executionId');
    if (query.dryRun === 'true') return c.json(await deps.redrive.preview(tenantId, executionId, body), 200);
    return c.json(await deps.redrive.redrive(tenantId, executionId, body, c.get('principal').name), 202);
  });

  admin.get(declaredPath('get', '/admin/tenants/{tenantId}/rejects', '/admin'), async (c) => {
    const tenantId = pathId(c, 'tenantId');
    const query = readQuery(c, ListRejectsQuery);
    const before = decodeCursor(query.cursor, (v): v is { before: number } => isRowId(v?.before));
    const page = await deps.rejects.list(tenantId, { limit: query.limit, before: before?.before });
    const last = page.items.at(-1);
    return c.json({ items: page.items, nextCursor: page.more && last ? encodeCursor({ before: last.id }) : null });
  });

  admin.get(declaredPath('get', '/admin/tenants/{tenantId}/triage', '/admin'), async (c) => {
    const tenantId = pathId(c, 'tenantId');
    const query = readQuery(c, TriageQuery);
    return c.json(await triage(deps.signals, query.window, tenantId));
  });

  admin.get(declaredPath('get', '/admin/tenants/{tenantId}/dlq', '/admin'), async (c) => {
    const tenantId = pathId(c, 'tenantId');
    const query = readQuery(c, ListDlqQuery);
    const before = decodeCursor(query.cursor, (v): v is { before: number } => isRowId(v?.before));
    const page = await deps.dlq.list(tenantId, {
      terminalReason: query.terminalReason,
      errorCode: query.errorCode,
      limit: query.limit,
      before: before?.before,
    });
    const last = page.entries.at(-1);
    return c.json({ items: page.entries, nextCursor: page.more && last ? encodeCursor({ before: last.id }) : null });
  });

  if (deps.fleet) admin.route('/', fleetRoutes(deps.fleet));
  admin.route('/', pipelineRoutes({ registry: deps.registry, definitions: deps.definitions }));

  const document = createOpenApiDocument(config['pipeline.admin.prefix']);
  mountDocs(app, prefix, document, config['pipeline.admin.docs-require-token'] ? bearerAuth({ tokens, role: 'submit', log }) : undefined);

  // Cross-tenant triage: admin tokens without a tenant allow-list only.
  app.get(`${prefix}${declaredPath('get', '/admin/triage')}`, bearerAuth({ tokens, role: 'admin', log }), async (c) => {
    if (c.get('principal').tenants)
      throw new ForbiddenError('cross-tenant triage needs a token without a tenant allow-list; use /admin/tenants/{tenantId}/triage');
    const query = readQuery(c, TriageQuery);
    return c.json(await triage(deps.signals, query.window));
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
