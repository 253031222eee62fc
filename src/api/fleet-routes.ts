/**
 * Admin routes for re-driving a fleet: failure groups of the DLQ, an execution's
 * story, and bulk re-drive jobs. Mounted under the admin app, behind its bearer auth.
 */
import { Hono } from 'hono';
import type { FailureGroupStore, FailureGroupRow } from '../store/failure-group-store';
import type { HistoryService } from '../service/history';
import type { RedriveJobs } from '../service/redrive-jobs';
import { isValidId } from '../ids';
import type { AuthEnv } from './middleware/bearer-auth';
import { decodeCursor, encodeCursor, isIsoTimestamp } from './request';
import { mount } from './mount';

export interface FleetDeps {
  groups: FailureGroupStore;
  history: HistoryService;
  jobs: RedriveJobs;
}

/**
 * The body limit of `POST …/redrive-jobs` alone: a selection by `executionIds` may list up to
 * 10,000 ids of up to 128 characters (about 1.3 MB as JSON); every other route keeps 64 KiB.
 */
export const MAX_JOB_BODY_BYTES = 2 * 1024 * 1024;

/** Whether a request is the job route's POST (the admin app gives it MAX_JOB_BODY_BYTES). */
export const isJobCreate = (method: string, path: string) => method === 'POST' && /\/tenants\/[^/]+\/redrive-jobs$/.test(path);

/** Rising when the last 30 minutes saw more envelopes than the 30 before, falling when fewer. */
function trend(buckets: number[]): 'rising' | 'falling' | 'stable' {
  const previous = buckets.slice(0, 3).reduce((a, b) => a + b, 0);
  const recent = buckets.slice(3).reduce((a, b) => a + b, 0);
  return recent > previous ? 'rising' : recent < previous ? 'falling' : 'stable';
}

export function groupView(row: FailureGroupRow) {
  return {
    groupId: row.group_id,
    signature: row.signature,
    count: row.count,
    firstSeen: new Date(row.first_seen).toISOString(),
    lastSeen: new Date(row.last_seen).toISOString(),
    lastHour: { count: row.buckets.reduce((a, b) => a + b, 0), bucketMinutes: 10, buckets: row.buckets, trend: trend(row.buckets) },
    selection: { groupId: row.group_id },
  };
}

export function fleetRoutes(deps: FleetDeps) {
  const routes = new Hono<AuthEnv>();

  const base = { base: '/admin' };
  mount(
    routes,
    'GET /admin/tenants/{tenantId}/dlq/groups',
    async (_c, { params: { tenantId }, query }, answer) => {
      const rows = await deps.groups.groups(tenantId, { terminalReason: query.terminalReason, errorCode: query.errorCode }, query.limit);
      return answer(200, { items: rows.map(groupView) });
    },
    base,
  );

  mount(
    routes,
    'GET /admin/tenants/{tenantId}/executions/{executionId}/history',
    async (_c, { params: { tenantId, executionId } }, answer) => {
      const story = await deps.history.story(tenantId, executionId);
      // The schema states disposition evidence as an open object; a copy is one (an interface has no index signature).
      return answer(200, { ...story, disposition: story.disposition && { ...story.disposition } });
    },
    base,
  );

  mount(
    routes,
    'POST /admin/tenants/{tenantId}/redrive-jobs',
    async (c, { params: { tenantId }, query, body }, answer) => {
      if (query.dryRun === 'true') return answer(200, await deps.jobs.dryRun(tenantId, body));
      const job = await deps.jobs.create(tenantId, body, c.get('principal').name);
      return answer(202, await deps.jobs.get(tenantId, job.jobId).then((view) => ({ ...view, dispatch: job.dispatch })));
    },
    { ...base, maxBytes: MAX_JOB_BODY_BYTES },
  );

  mount(
    routes,
    'GET /admin/tenants/{tenantId}/redrive-jobs',
    async (_c, { params: { tenantId }, query }, answer) => {
      const after = decodeCursor(
        query.cursor,
        (v): v is { createdAt: string; jobId: string } => isIsoTimestamp(v?.createdAt) && typeof v?.jobId === 'string' && isValidId(v.jobId),
      );
      const page = await deps.jobs.list(tenantId, { limit: query.limit, after });
      const last = page.items.at(-1);
      return answer(200, { items: page.items, nextCursor: page.more && last ? encodeCursor({ createdAt: last.createdAt, jobId: last.jobId }) : null });
    },
    base,
  );

  mount(
    routes,
    'GET /admin/tenants/{tenantId}/redrive-jobs/{jobId}',
    async (_c, { params: { tenantId, jobId } }, answer) => answer(200, await deps.jobs.get(tenantId, jobId)),
    base,
  );

  // The body is optional (declared so): none, or an empty one whatever its Content-Type, carries no reason.
  for (const action of ['pause', 'resume', 'abort'] as const) {
    mount(
      routes,
      `POST /admin/tenants/{tenantId}/redrive-jobs/{jobId}/${action}`,
      async (c, { params: { tenantId, jobId }, body }, answer) =>
        answer(200, await deps.jobs.control(tenantId, jobId, action, c.get('principal').name, body.reason)),
      base,
    );
  }

  return routes;
}
