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
import { decodeCursor, encodeCursor, isIsoTimestamp, pathId, readJson, readQuery } from './request';
import { GroupsQuery, ListRedriveJobsQuery, RedriveQuery } from '../contract/parameters';
import { JobControlRequest, RedriveJobRequest } from '../contract/requests';
import { declaredPath } from './openapi';

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

  routes.get(declaredPath('get', '/admin/tenants/{tenantId}/dlq/groups', '/admin'), async (c) => {
    const tenantId = pathId(c, 'tenantId');
    const query = readQuery(c, GroupsQuery);
    const rows = await deps.groups.groups(tenantId, { terminalReason: query.terminalReason, errorCode: query.errorCode }, query.limit);
    return c.json({ items: rows.map(groupView) });
  });

  routes.get(declaredPath('get', '/admin/tenants/{tenantId}/executions/{executionId}/history', '/admin'), async (c) => {
    const tenantId = pathId(c, 'tenantId');
    const executionId = pathId(c, 'executionId');
    return c.json(await deps.history.story(tenantId, executionId));
  });

  routes.post(declaredPath('post', '/admin/tenants/{tenantId}/redrive-jobs', '/admin'), async (c) => {
    const query = readQuery(c, RedriveQuery);
    const body = await readJson(c, RedriveJobRequest, { maxBytes: MAX_JOB_BODY_BYTES });
    const tenantId = pathId(c, 'tenantId');
    if (query.dryRun === 'true') return c.json(await deps.jobs.dryRun(tenantId, body), 200);
    const job = await deps.jobs.create(tenantId, body, c.get('principal').name);
    return c.json(await deps.jobs.get(tenantId, job.jobId).then((view) => ({ ...view, dispatch: job.dispatch })), 202);
  });

  routes.get(declaredPath('get', '/admin/tenants/{tenantId}/redrive-jobs', '/admin'), async (c) => {
    const tenantId = pathId(c, 'tenantId');
    const query = readQuery(c, ListRedriveJobsQuery);
    const after = decodeCursor(
      query.cursor,
      (v): v is { createdAt: string; jobId: string } => isIsoTimestamp(v?.createdAt) && typeof v?.jobId === 'string' && isValidId(v.jobId),
    );
    const page = await deps.jobs.list(tenantId, { limit: query.limit, after });
    const last = page.items.at(-1);
    return c.json({ items: page.items, nextCursor: page.more && last ? encodeCursor({ createdAt: last.createdAt, jobId: last.jobId }) : null });
  });

  routes.get(declaredPath('get', '/admin/tenants/{tenantId}/redrive-jobs/{jobId}', '/admin'), async (c) => {
    return c.json(await deps.jobs.get(pathId(c, 'tenantId'), pathId(c, 'jobId')));
  });

  for (const action of ['pause', 'resume', 'abort'] as const) {
    routes.post(declaredPath('post', `/admin/tenants/{tenantId}/redrive-jobs/{jobId}/${action}`, '/admin'), async (c) => {
      const tenantId = pathId(c, 'tenantId');
      const jobId = pathId(c, 'jobId');
      // The body is optional: none, or an empty one whatever its Content-Type, carries no reason.
      const body = await readJson(c, JobControlRequest, { optional: true });
      return c.json(await deps.jobs.control(tenantId, jobId, action, c.get('principal').name, body.reason));
    });
  }

  return routes;
}
