/**
 * Admin routes for re-driving a fleet: failure groups of the DLQ, an execution's
 * story, and bulk re-drive jobs. Mounted under the admin app, behind its bearer auth.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import type { FailureGroupStore, FailureGroupRow } from '../store/failure-group-store';
import type { HistoryService } from '../service/history';
import { JOB_INTEGER_FIELDS, RedriveJobRequest, type RedriveJobs } from '../service/redrive-jobs';
import { storableText } from '../storable';
import type { AuthEnv } from './middleware/bearer-auth';
import { decodeCursor, encodeCursor, isIsoTimestamp, pathId, readJson, readQuery } from './request';
import { ERROR_CODE_PATTERN, Limit, ListRedriveJobsQuery, RedriveQuery } from './queries';
import { TerminalReasonSchema } from './schemas';

export interface FleetDeps {
  groups: FailureGroupStore;
  history: HistoryService;
  jobs: RedriveJobs;
}

/** The optional body of pause / resume / abort. */
export const JobControlRequest = z.object({ reason: storableText(z.string().trim().min(1).max(1000)).optional() }).strict();

const ErrorCode = z.string().regex(ERROR_CODE_PATTERN);
export const GroupsQuery = z
  .object({
    terminalReason: TerminalReasonSchema.optional(),
    errorCode: ErrorCode.optional(),
    limit: Limit.unwrap().default(100),
  })
  .strict();

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

  routes.get('/tenants/:tenantId/dlq/groups', async (c) => {
    const tenantId = pathId(c, 'tenantId');
    const query = readQuery(c, GroupsQuery);
    const rows = await deps.groups.groups(tenantId, { terminalReason: query.terminalReason, errorCode: query.errorCode }, query.limit);
    return c.json({ items: rows.map(groupView) });
  });

  routes.get('/tenants/:tenantId/executions/:executionId/history', async (c) => {
    const tenantId = pathId(c, 'tenantId');
    const executionId = pathId(c, 'executionId');
    return c.json(await deps.history.story(tenantId, executionId));
  });

  routes.post('/tenants/:tenantId/redrive-jobs', async (c) => {
    const query = readQuery(c, RedriveQuery);
    const body = await readJson(c, RedriveJobRequest, { integerFields: JOB_INTEGER_FIELDS });
    const tenantId = pathId(c, 'tenantId');
    if (query.dryRun === 'true') return c.json(await deps.jobs.dryRun(tenantId, body), 200);
    const job = await deps.jobs.create(tenantId, body, c.get('principal').name);
    return c.json(await deps.jobs.get(tenantId, job.jobId).then((view) => ({ ...view, dispatch: job.dispatch })), 202);
  });

  routes.get('/tenants/:tenantId/redrive-jobs', async (c) => {
    const tenantId = pathId(c, 'tenantId');
    const query = readQuery(c, ListRedriveJobsQuery);
    const after = decodeCursor(
      query.cursor,
      (v): v is { createdAt: string; jobId: string } => isIsoTimestamp(v?.createdAt) && typeof v?.jobId === 'string' && v.jobId.length <= 64,
    );
    const page = await deps.jobs.list(tenantId, { limit: query.limit, after });
    const last = page.items.at(-1);
    return c.json({ items: page.items, nextCursor: page.more && last ? encodeCursor({ createdAt: last.createdAt, jobId: last.jobId }) : null });
  });

  routes.get('/tenants/:tenantId/redrive-jobs/:jobId', async (c) => {
    return c.json(await deps.jobs.get(pathId(c, 'tenantId'), pathId(c, 'jobId')));
  });

  for (const action of ['pause', 'resume', 'abort'] as const) {
    routes.post(`/tenants/:tenantId/redrive-jobs/:jobId/${action}`, async (c) => {
      const tenantId = pathId(c, 'tenantId');
      const jobId = pathId(c, 'jobId');
      // The body is optional: an empty one (or none) carries no reason.
      const body =
        c.req.header('content-length') === '0' || (!c.req.header('content-type') && !c.req.header('transfer-encoding'))
          ? {}
          : await readJson(c, JobControlRequest);
      return c.json(await deps.jobs.control(tenantId, jobId, action, c.get('principal').name, body.reason));
    });
  }

  return routes;
}
