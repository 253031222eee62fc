/**
 * Admin routes for re-driving a fleet: failure groups of the DLQ, an execution's
 * story, and bulk re-drive jobs. Mounted under the admin app, behind its bearer auth.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import type { FailureGroupStore, FailureGroupRow } from '../store/failure-group-store';
import type { HistoryService } from '../service/history';
import type { AuthEnv } from './middleware/bearer-auth';
import { pathId, readQuery } from './request';
import { Limit } from './queries';
import { TerminalReasonSchema } from './schemas';

export interface FleetDeps {
  groups: FailureGroupStore;
  history: HistoryService;
}

const ErrorCode = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/);
const GroupsQuery = z.object({
  terminalReason: TerminalReasonSchema.optional(),
  errorCode: ErrorCode.optional(),
  limit: Limit.unwrap().default(100),
}).strict();

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

  return routes;
}
