/**
 * Every request body the API reads, as the zod schema its handler parses with and the
 * OpenAPI document states (with the rules between members, ./rules). Pure: no I/O.
 */
import { z } from 'zod';
import { CorrelationId, Id, ID_PATTERN } from '../ids';
import { StorableJson, storableText } from '../storable';
import { CONFIRMED_DISPOSITIONS, REDRIVE_INTENTS } from '../spec-words';
import type { HaltOn } from '../workflows/redrive-job-policy';
import { ERROR_CODE_PATTERN, IsoTime, TerminalReasonSchema } from './fields';
import { GROUP_ID_PATTERN } from './failure-group';
import { INTENT_NEEDS_ALLOW_FAILED, type MemberRule, withRules } from './rules';

export const StartExecutionRequest = z
  .object({
    pipeline: storableText(z.string().min(1).max(64)),
    executionId: Id.optional(),
    executionKey: storableText(z.string().min(1).max(256)).optional(),
    input: StorableJson.optional(),
    correlationId: CorrelationId.optional(),
    resource: z
      .object({ type: storableText(z.string().min(1).max(128)), name: storableText(z.string().min(1).max(256)) })
      .strict()
      .optional(),
  })
  .strict();
export type StartExecutionRequest = z.infer<typeof StartExecutionRequest>;

export const PublishCheckpointRequest = z
  .object({
    handoffKey: storableText(z.string().min(1).max(256)),
    pipeline: storableText(z.string().min(1).max(64)),
    records: z.array(StorableJson).max(10_000),
  })
  .strict();
export type PublishCheckpointRequest = z.infer<typeof PublishCheckpointRequest>;

/** The largest version or step index the store can hold (a Postgres `integer`); stated in the document. */
export const MAX_STORED_INTEGER = 2_147_483_647;

/** A corrected input for the step a re-drive resumes or a fork starts at: a merge patch, or the whole input. Audited; values never logged. */
const CorrectedInput = {
  /** an RFC 7396 JSON merge patch applied to the step's input (`null` removes a member) */
  inputPatch: StorableJson.optional().meta({ description: "an RFC 7396 JSON merge patch applied to the step's persisted input; admin or repair tokens only" }),
  /** the step's whole input, replaced */
  input: StorableJson.optional().meta({ description: "the step's input, replaced whole; admin or repair tokens only" }),
};
/** A patch or a replacement, never both: a rule the document states too. */
const ONE_CORRECTION: MemberRule = { member: 'inputPatch', excludes: 'input', message: 'give inputPatch or input, not both' };

export const RedriveRequest = withRules(
  z
    .object({
      /** the ExecutionRecord version the caller read (the store keeps it as a Postgres integer) */
      expectedVersion: z.number().int().min(0).max(MAX_STORED_INTEGER),
      /** why; kept in the audit row */
      reason: storableText(z.string().trim().min(1).max(1000), { notBlank: true }),
      /** false = ordinary replay; true permits re-drive of a FAILED (or REMOTE_OUTCOME_UNKNOWN) execution */
      allowFailed: z.boolean(),
      /** deliberately retry the retained failed Command step */
      intent: z.enum(REDRIVE_INTENTS).optional(),
      /** the operator attests the ambiguous remote call made no effect */
      confirmedDisposition: z.enum(CONFIRMED_DISPOSITIONS).optional(),
      /** re-drive although the worker's lookup contradicts (or cannot check) confirmedDisposition; kept in the audit row */
      overrideEvidence: z.literal(true).optional(),
      /** resume under the pipeline's current version, at the same-named step, when the pinned version is gone (audited) */
      resumeUnderCurrentVersion: z.boolean().optional(),
      ...CorrectedInput,
    })
    .strict(),
  [
    INTENT_NEEDS_ALLOW_FAILED,
    ONE_CORRECTION,
    {
      member: 'inputPatch',
      requires: 'allowFailed',
      value: true,
      message: 'inputPatch corrects a FAILED step: it requires allowFailed=true (never on an ordinary replay)',
    },
    {
      member: 'input',
      requires: 'allowFailed',
      value: true,
      message: 'input corrects a FAILED step: it requires allowFailed=true (never on an ordinary replay)',
    },
    {
      member: 'overrideEvidence',
      requires: 'confirmedDisposition',
      value: 'NOT_APPLIED',
      message: 'overrideEvidence applies only with confirmedDisposition NOT_APPLIED',
    },
  ],
);
export type RedriveRequest = z.infer<typeof RedriveRequest>;

/** `POST …/executions/{e}/fork`: a new execution of the same pinned pipeline version from a step whose input is known. */
export const ForkRequest = withRules(
  z
    .object({
      /** the new execution's id (the tenant's own namespace: an id in use is a 409) */
      newExecutionId: Id,
      /** the step to start at; default the parent's resume step (its failed step, or where it stopped) */
      fromStep: z.number().int().min(0).max(MAX_STORED_INTEGER).optional(),
      /** why; kept in the audit row */
      reason: storableText(z.string().trim().min(1).max(1000), { notBlank: true }),
      /** the same as ?dryRun=true */
      dryRun: z.boolean().optional(),
      ...CorrectedInput,
    })
    .strict(),
  [ONE_CORRECTION],
);
export type ForkRequest = z.infer<typeof ForkRequest>;

export const MAX_JOB_ITEMS = 10_000;

const Filter = z
  .object({
    groupId: z.string().regex(GROUP_ID_PATTERN, 'a groupId from GET …/dlq/groups').optional(),
    terminalReason: TerminalReasonSchema.optional(),
    errorCode: z.string().regex(ERROR_CODE_PATTERN).optional(),
    step: storableText(z.string().min(1).max(128)).optional(),
    from: IsoTime.optional(),
    to: IsoTime.optional(),
  })
  .strict()
  .refine((f) => Object.values(f).some((value) => value !== undefined), {
    message: 'give at least one of groupId, terminalReason, errorCode, step, from, to (or executionIds)',
  })
  // The document states the refinement: an empty filter would select every envelope.
  .meta({
    override: ({ jsonSchema }: { jsonSchema: Record<string, unknown> }) => {
      jsonSchema.minProperties = 1;
    },
  });
const Ids = z
  .object({
    executionIds: z.array(z.string().regex(ID_PATTERN, 'an execution id')).min(1).max(MAX_JOB_ITEMS),
  })
  .strict();

/** A job's halt rules when its request names none (filled in at creation, so a job's rules never change under it). */
export const DEFAULT_HALT_ON: HaltOn = { failedAgainShare: 0.5, minFinished: 5, remoteOutcomeUnknown: true };

export const HaltOnSchema = z
  .object({
    failedAgainShare: z.number().gt(0).max(1).default(DEFAULT_HALT_ON.failedAgainShare),
    minFinished: z.number().int().min(1).max(MAX_JOB_ITEMS).default(DEFAULT_HALT_ON.minFinished),
    remoteOutcomeUnknown: z.boolean().default(DEFAULT_HALT_ON.remoteOutcomeUnknown),
  })
  .strict();

export const RedriveJobRequest = withRules(
  z
    .object({
      /** unredriven DLQ envelopes by filter, or listed executions */
      selection: z.union([Ids, Filter]),
      reason: storableText(z.string().trim().min(1).max(1000), { notBlank: true }),
      allowFailed: z.boolean(),
      intent: z.enum(REDRIVE_INTENTS).optional(),
      batchSize: z.number().int().min(1).max(1000).default(50),
      ratePerSecond: z.number().min(0.1).max(300).default(10),
      canary: z.number().int().min(1).max(1000).optional(),
      haltOn: HaltOnSchema.default(DEFAULT_HALT_ON),
    })
    .strict(),
  [INTENT_NEEDS_ALLOW_FAILED],
);
export type RedriveJobRequest = z.infer<typeof RedriveJobRequest>;

/** The optional body of pause / resume / abort. */
export const JobControlRequest = z.object({ reason: storableText(z.string().trim().min(1).max(1000), { notBlank: true }).optional() }).strict();

/** A history page of payloads: larger than the API's 64 KiB bodies. */
export const MAX_CODEC_BODY_BYTES = 4 * 1024 * 1024;

const Base64 = z
  .string()
  .max(MAX_CODEC_BODY_BYTES)
  .regex(/^[A-Za-z0-9+/_-]*={0,2}$/, 'must be base64');
export const CodecRequest = z.object({
  payloads: z.array(z.object({ metadata: z.record(z.string(), Base64).optional(), data: Base64.optional() })).max(10_000),
});
