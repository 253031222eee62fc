/**
 * The query strings the routes accept, as the zod schemas the handlers parse with. The
 * OpenAPI document describes the same schemas, so what it says about a parameter (its
 * range, its default, its allowed values) is what the handler enforces.
 */
import { z } from 'zod';

/** An `errorCode` as a query or selection filter: 1–64 of [A-Za-z0-9_.-]. */
export const ERROR_CODE_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
import { parseDuration } from '../config/duration';
import { ExecutionStatusSchema, TerminalReasonSchema } from './schemas';

/** `limit`: a whole number 1–500, default 50. */
export const Limit = z
  .string()
  .regex(/^\d{1,6}$/, 'must be a whole number, e.g. 50')
  .transform(Number)
  .pipe(z.number().int().min(1).max(500))
  .default(50)
  .meta({ description: 'page size: a whole number from 1 to 500; default 50' });
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
    window: z
      .string()
      .default('15m')
      .transform((value, ctx) => {
        const ms = parseDuration(value);
        if (ms === undefined || ms < 60_000 || ms > 86_400_000) {
          ctx.addIssue({ code: 'custom', message: 'window must be a duration from 1m to 24h, e.g. 15m' });
          return z.NEVER;
        }
        return ms;
      })
      .meta({ description: 'a duration from 1m to 24h, e.g. 15m; default 15m' }),
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
