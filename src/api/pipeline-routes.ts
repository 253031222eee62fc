/**
 * `GET /admin/tenants/{t}/pipelines`: the pipeline definitions this service has, which
 * version new executions use, and how many of the tenant's executions still need each
 * version (unfinished ones must finish on it; FAILED ones are re-driven on it). An old
 * version can be retired once its counts are zero in every tenant (runbook). Each version
 * shows the running code's fingerprint, every shape stored under it, whether the code
 * matches them (`codeMatches`), and how many unfinished executions are pinned to another
 * shape of it (`unfinishedOtherShape`: they cannot run on the code deployed now).
 */
import { Hono } from 'hono';
import type { PipelineRegistry } from '../pipeline/registry';
import type { DefinitionStore, PinnedCount } from '../store/definition-store';
import type { AuthEnv } from './middleware/bearer-auth';
import { mount } from './mount';
import type { ExecutionStatus } from '../spec-words';

export interface PipelineRoutesDeps {
  registry: PipelineRegistry;
  definitions: DefinitionStore;
}

const UNFINISHED = ['QUEUED', 'RUNNING', 'FAILED', 'REMOTE_OUTCOME_UNKNOWN'] as const satisfies readonly ExecutionStatus[];

export function pipelineRoutes(deps: PipelineRoutesDeps) {
  const routes = new Hono<AuthEnv>();

  mount(
    routes,
    'GET /admin/tenants/{tenantId}/pipelines',
    async (_c, { params: { tenantId } }, answer) => {
      const counts = await deps.definitions.pinnedCounts(tenantId);
      const registered = deps.registry.list();
      const names = [...new Set([...registered.map((pipeline) => pipeline.name), ...counts.map((count) => count.pipeline)])].sort();
      const items = await Promise.all(
        names.map(async (name) => {
          const versions = [
            ...new Set([
              ...registered.filter((p) => p.name === name).map((p) => p.version),
              ...counts.filter((n) => n.pipeline === name).map((n) => n.version),
            ]),
          ].sort((a, b) => a - b);
          return {
            pipeline: name,
            currentVersion: deps.registry.has(name) ? deps.registry.get(name).version : null,
            versions: await Promise.all(
              versions.map(async (version) => {
                const definition = deps.registry.find(name, version);
                const steps = definition ? definition.steps.map((step) => step.name) : ((await deps.definitions.find(name, version, null))?.steps ?? null);
                const storedFingerprints = await deps.definitions.fingerprints(name, version);
                return {
                  version,
                  registered: definition !== undefined,
                  newExecutions: definition ? definition.newExecutions !== false : false,
                  fingerprint: definition?.fingerprint ?? null,
                  storedFingerprints,
                  codeMatches: definition ? storedFingerprints.every((fingerprint) => fingerprint === definition.fingerprint) : null,
                  steps,
                  unfinished: unfinished(counts.filter((n) => n.pipeline === name && n.version === version)),
                  unfinishedOtherShape: definition ? await deps.definitions.pinnedToOtherShape(name, version, definition.fingerprint, tenantId) : 0,
                };
              }),
            ),
          };
        }),
      );
      return answer(200, { items });
    },
    { base: '/admin' },
  );

  return routes;
}

function unfinished(counts: PinnedCount[]) {
  const byStatus = Object.fromEntries(UNFINISHED.map((status) => [status, counts.find((n) => n.status === status)?.count ?? 0])) as Record<
    (typeof UNFINISHED)[number],
    number
  >;
  return { ...byStatus, total: counts.reduce((sum, n) => sum + n.count, 0) };
}
