/**
 * What both sides of a bulk re-drive job share: the request's schema (validated on the way
 * in, and again on every read of the stored row, so a job written under an older schema is
 * an error naming the row, never a silent cast), the job's workflow id, the single
 * re-drive request an item becomes, and a bounded-concurrency loop. Pure: no I/O, no
 * import of either side (service/redrive-jobs.ts is the API's, service/redrive-job-ticks.ts
 * the workflow's activities').
 */
import { z } from 'zod';
import { StoredValueError } from '../errors';
import { storableText } from '../storable';
import type { ControlEntry, RedriveJob, SelectedItem } from '../store/redrive-job-store';
import { TerminalReasonSchema } from '../api/schemas';
import { ERROR_CODE_PATTERN } from '../api/queries';
import { ID_PATTERN } from '../ids';
import { DEFAULT_HALT_ON, type HaltOn } from '../workflows/redrive-job-policy';
import type { RedriveRequest } from './redrive';

export const MAX_JOB_ITEMS = 10_000;

const IsoTime = z.iso.datetime({ offset: true }).meta({ description: 'ISO 8601 timestamp' });
const Filter = z
  .object({
    groupId: z
      .string()
      .regex(/^[0-9a-f]{16}$/, 'a groupId from GET …/dlq/groups')
      .optional(),
    terminalReason: TerminalReasonSchema.optional(),
    errorCode: z.string().regex(ERROR_CODE_PATTERN).optional(),
    step: storableText(z.string().min(1).max(128)).optional(),
    from: IsoTime.optional(),
    to: IsoTime.optional(),
  })
  .strict()
  .refine((f) => Object.values(f).some((value) => value !== undefined), {
    message: 'give at least one of groupId, terminalReason, errorCode, step, from, to (or executionIds)',
  });
const Ids = z
  .object({
    executionIds: z.array(z.string().regex(ID_PATTERN, 'an execution id')).min(1).max(MAX_JOB_ITEMS),
  })
  .strict();

const HaltOnSchema = z
  .object({
    failedAgainShare: z.number().gt(0).max(1).default(DEFAULT_HALT_ON.failedAgainShare),
    minFinished: z.number().int().min(1).max(MAX_JOB_ITEMS).default(DEFAULT_HALT_ON.minFinished),
    remoteOutcomeUnknown: z.boolean().default(DEFAULT_HALT_ON.remoteOutcomeUnknown),
  })
  .strict();

export const RedriveJobRequest = z
  .object({
    /** unredriven DLQ envelopes by filter, or listed executions */
    selection: z.union([Ids, Filter]),
    reason: storableText(z.string().trim().min(1).max(1000)),
    allowFailed: z.boolean(),
    intent: z.literal('RETRY_FAILED_COMMAND').optional(),
    batchSize: z.number().int().min(1).max(1000).default(50),
    ratePerSecond: z.number().min(0.1).max(300).default(10),
    canary: z.number().int().min(1).max(1000).optional(),
    haltOn: HaltOnSchema.default(DEFAULT_HALT_ON),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (body.intent && body.allowFailed !== true)
      ctx.addIssue({ code: 'custom', path: ['intent'], message: 'intent RETRY_FAILED_COMMAND requires allowFailed=true' });
  });
export type RedriveJobRequest = z.infer<typeof RedriveJobRequest>;
/** Fields whose JSON literal must be an integer (`50`, never `50.0`). */
export const JOB_INTEGER_FIELDS = ['batchSize', 'canary'];

/** A control-log entry as stored (`halt` and `fail` are the system's own). */
const ControlEntrySchema = z.object({
  action: z.enum(['pause', 'resume', 'abort', 'halt', 'fail']),
  principal: z.string(),
  at: z.string(),
  reason: z.string().optional(),
}) satisfies z.ZodType<ControlEntry>;

/** The stored JSON columns of a job, each with its schema. */
const STORED = {
  request: RedriveJobRequest,
  haltOn: HaltOnSchema.required(),
  controlLog: z.array(ControlEntrySchema),
  excluded: z.record(z.string(), z.number().int().nonnegative()),
} as const;

/** A job row whose JSON columns have been parsed by their schemas. */
export type ParsedJob = Omit<RedriveJob, 'request' | 'haltOn'> & { request: RedriveJobRequest; haltOn: HaltOn };

/** Parses the job's stored JSON; a value that no longer parses is a StoredValueError naming the row and the field. */
export function parseJob(job: RedriveJob): ParsedJob {
  const parse = <K extends keyof typeof STORED>(field: K, value: unknown): z.infer<(typeof STORED)[K]> => {
    const parsed = STORED[field].safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new StoredValueError('redrive_job', `${job.tenantId}/${job.jobId}`, field, `${issue.path.join('.') || '(root)'}: ${issue.message}`);
    }
    return parsed.data as z.infer<(typeof STORED)[K]>;
  };
  return {
    ...job,
    request: parse('request', job.request),
    haltOn: parse('haltOn', job.haltOn),
    controlLog: parse('controlLog', job.controlLog),
    excluded: parse('excluded', job.excluded),
  };
}

export function jobWorkflowId(tenantId: string, jobId: string): string {
  return `redrive-job/${tenantId}/${jobId}`;
}

/** The single re-drive an item becomes: the job's reason and intent, the version read at selection. */
export function itemRequest(body: Pick<RedriveJobRequest, 'reason' | 'allowFailed' | 'intent'>, item: SelectedItem): RedriveRequest {
  return { expectedVersion: item.expectedVersion, reason: body.reason, allowFailed: body.allowFailed, ...(body.intent ? { intent: body.intent } : {}) };
}

export function round(value: number): number {
  return Math.round(value * 10) / 10;
}

/** Runs `fn` over `items`, at most `limit` at once. */
export async function eachLimited<T>(items: T[], limit: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      await fn(items[index], index);
    }
  });
  await Promise.all(lanes);
}
