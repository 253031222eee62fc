/**
 * `GET /api/tenants/{t}/executions/{e}/result`: the final output of a SUCCEEDED execution,
 * for the caller that submitted its input (a submit token of the tenant) or an admin token.
 * The one route that answers payload data: nothing here logs it, and the answer is
 * `Cache-Control: no-store`.
 *
 * The output is the store's copy (the last step's committed output, which the record keeps
 * as it keeps every segment input), not the Temporal workflow result: no Temporal call on
 * the request path, the same answer after a re-drive's new run, and the record's retention
 * (docs/decisions.md, "Execution results"). `?wait=30s` long-polls the store until the
 * execution ends or the wait (at most 60 s) passes; then 409 with the status it has.
 */
import { Hono } from 'hono';
import { ConflictError, ExecutionNotFoundError } from '../errors';
import type { ExecutionRecord, ExecutionStore } from '../store/execution-store';
import type { AuthEnv } from './middleware/bearer-auth';
import { MAX_RESULT_WAIT_MS } from '../contract/parameters';
import { ExecutionResultSchema } from '../contract/responses';
import { mount } from './mount';
import { ACTIVE_EXECUTION_STATUSES } from '../spec-words';

export { MAX_RESULT_WAIT_MS };

/** Store reads while waiting start this far apart and back off to POLL_MAX_MS. */
const POLL_START_MS = 100;
const POLL_MAX_MS = 1_000;

/** Still running: worth waiting for. FAILED and REMOTE_OUTCOME_UNKNOWN change only by a re-drive. */
const RUNNING = new Set<ExecutionRecord['status']>(ACTIVE_EXECUTION_STATUSES);

export function resultRoutes(deps: { store: ExecutionStore }) {
  const routes = new Hono<AuthEnv>();
  mount(
    routes,
    'GET /api/tenants/{tenantId}/executions/{executionId}/result',
    async (c, { params: { tenantId, executionId }, query: { wait } }, answer) => {
      const deadline = Date.now() + wait;
      const aborted = c.req.raw.signal;
      let record = await deps.store.get(tenantId, executionId);
      if (!record) throw new ExecutionNotFoundError(tenantId, executionId);
      for (let pause = POLL_START_MS; RUNNING.has(record.status) && Date.now() < deadline && !aborted.aborted; pause = Math.min(POLL_MAX_MS, pause * 2)) {
        await new Promise((resolve) => setTimeout(resolve, Math.min(pause, Math.max(0, deadline - Date.now()))));
        record = (await deps.store.get(tenantId, executionId)) ?? record;
      }
      if (record.status !== 'SUCCEEDED') {
        throw new ConflictError(`execution ${executionId} is ${record.status}; it has a result only once SUCCEEDED`, 'EXECUTION_NOT_SUCCEEDED', {
          executionStatus: record.status,
        });
      }
      c.header('Cache-Control', 'no-store');
      return answer(
        200,
        ExecutionResultSchema.parse({
          tenantId,
          executionId,
          pipeline: record.pipeline,
          pipelineVersion: record.pipelineVersion,
          status: record.status,
          updatedAt: record.updatedAt,
          output: record.segmentInput,
        }),
      );
    },
    { base: '/api' },
  );
  return routes;
}
