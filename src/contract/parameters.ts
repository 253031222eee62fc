/**
 * The query strings the routes accept, as the zod schemas the handlers parse with. The
 * OpenAPI document describes the same schemas, so what it says about a parameter (its
 * range, its default, its allowed values) is what the handler enforces.
 */
import { z } from 'zod';
import { Id } from '../ids';

import { ERROR_CODE_PATTERN } from './fields';
export { ERROR_CODE_PATTERN };
import { durationParam, limitParam } from './fields';
import { ExecutionStatusSchema, TerminalReasonSchema } from './responses';

/** `limit`: a whole number 1–500, default 50. */
export const Limit = limitParam(50);
/** `cursor`: the `nextCursor` of the previous page. */
const Cursor = z.string().max(512).optional().meta({ description: 'nextCursor of the previous page' });

export const ListExecutionsQuery = z
  .object({
    status: ExecutionStatusSchema.optional(),
    limit: Limit,
    cursor: Cursor,
  })
  .strict();
export const ListRejectsQuery = z.object({ limit: Limit, cursor: Cursor }).strict();
export const ListRedriveJobsQuery = z.object({ limit: Limit, cursor: Cursor }).strict();
/** `window`: a duration from 1m to 24h, default 15m (parsed to ms). */
export const TriageQuery = z
  .object({
    window: durationParam({ min: 60_000, max: 86_400_000, fallback: '15m', name: 'window', range: '1m to 24h', example: '15m' }),
  })
  .strict();
export const RedriveQuery = z.object({ dryRun: z.enum(['true', 'false']).optional().meta({ description: 'run every check, change nothing' }) }).strict();
export const ListDlqQuery = z
  .object({
    terminalReason: TerminalReasonSchema.optional(),
    errorCode: z.string().regex(ERROR_CODE_PATTERN).optional(),
    limit: Limit,
    cursor: Cursor,
  })
  .strict();

export const GroupsQuery = z
  .object({
    terminalReason: TerminalReasonSchema.optional(),
    errorCode: z.string().regex(ERROR_CODE_PATTERN).optional(),
    limit: limitParam(100),
  })
  .strict();

/** The longest a caller may wait for a result in one request. */
export const MAX_RESULT_WAIT_MS = 60_000;
export const ResultQuery = z
  .object({
    wait: durationParam({ min: 0, max: MAX_RESULT_WAIT_MS, fallback: '0s', name: 'wait', range: '0s to 60s', example: '30s' }).meta({
      description: 'how long to wait for the execution to end before answering 409: a duration from 0s to 60s, e.g. 30s; default 0s',
    }),
  })
  .strict();

/** The path parameters. */
export const TenantPath = z.object({ tenantId: Id.meta({ description: 'tenant id', example: 'acme' }) });
export const JobPath = TenantPath.extend({ jobId: Id.meta({ description: 'bulk re-drive job id' }) });
export const ExecutionPath = TenantPath.extend({ executionId: Id.meta({ description: 'execution id', example: 'order-1' }) });
