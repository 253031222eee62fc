/**
 * What both sides of a bulk re-drive job share: the stored row's JSON parsed with the
 * contract's schemas (src/contract/requests.ts validates the request on the way in; every
 * read of the row parses it again, so a job written under an older schema is an error
 * naming the row, never a silent cast), the job's workflow id, the single
 * re-drive request an item becomes, and a bounded-concurrency loop. Pure: no I/O, no
 * import of either side (service/redrive-jobs.ts is the API's, service/redrive-job-ticks.ts
 * the workflow's activities').
 */
import { z } from 'zod';
import { parseStored } from '../store/stored-json';
import type { JobYielding, RedriveJob, SelectedItem } from '../store/redrive-job-store';
import type { HaltOn } from '../workflows/redrive-job-policy';
import { HaltOnSchema, RedriveJobRequest, type RedriveRequest } from '../contract/requests';
import { JobControlEntrySchema } from '../contract/responses';

/** The stored JSON columns of a job, each with its schema. */
const STORED = {
  request: RedriveJobRequest,
  haltOn: HaltOnSchema.required(),
  controlLog: z.array(JobControlEntrySchema),
  excluded: z.record(z.string(), z.number().int().nonnegative()),
  yielding: z.object({ rate: z.number().positive(), quietestMs: z.number().nullable(), latestMs: z.number().nullable(), at: z.string() }).nullable(),
} as const;

/** A job row whose JSON columns have been parsed by their schemas. */
export type ParsedJob = Omit<RedriveJob, 'request' | 'haltOn' | 'yielding'> & { request: RedriveJobRequest; haltOn: HaltOn; yielding: JobYielding | null };

/** Parses the job's stored JSON; a value that no longer parses is a StoredValueError naming the row and the field. */
export function parseJob(job: RedriveJob): ParsedJob {
  const at = (field: keyof typeof STORED) => ({ table: 'redrive_job', row: `${job.tenantId}/${job.jobId}`, field });
  return {
    ...job,
    request: parseStored(STORED.request, job.request, at('request')),
    haltOn: parseStored(STORED.haltOn, job.haltOn, at('haltOn')),
    controlLog: parseStored(STORED.controlLog, job.controlLog, at('controlLog')),
    excluded: parseStored(STORED.excluded, job.excluded, at('excluded')),
    yielding: parseStored(STORED.yielding, job.yielding, at('yielding')),
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
