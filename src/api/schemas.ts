/**
 * Zod schemas of what the API answers. The OpenAPI document is generated from these
 * and from the request schemas the handlers parse with; tests validate real responses
 * against them, so the document cannot drift from the behaviour.
 */
import { z } from 'zod';
import { DlqEnvelope } from '../dlq/envelope';
import { RedriveAccepted } from '../service/redrive';
import { ERROR_CODES, type ErrorCode } from '../errors';
import { EFFECT_STATUSES, EXECUTION_STATUSES, REDRIVE_MODES, TERMINAL_REASONS } from '../spec-words';

const Timestamp = z.string().meta({ description: 'ISO-8601 timestamp', example: '2026-11-21T12:00:00.000Z' });

const RemoteCallSchema = z.object({
  transitionKey: z.string(),
  protocol: z.string(),
  target: z.string(),
  startedAt: Timestamp,
  deadlineMs: z.number().int(),
  elapsedMs: z.number().int(),
  inProgress: z
    .object({
      state: z.literal('IN_PROGRESS'),
      answers: z.number().int(),
      firstAt: Timestamp,
      lastAt: Timestamp,
      budgetMs: z.number().int(),
      platform: z.string().nullable(),
    })
    .optional()
    .meta({
      description:
        'set when the execution parked because the worker kept answering "in progress" for this identity past pipeline.orchestrator.worker.in-progress-budget: it took the call, its outcome was not stored',
    }),
});

const DispositionEvidenceSchema = RemoteCallSchema.extend({
  lookup: z.enum(['ANSWERED', 'NOT_OFFERED', 'UNAVAILABLE']),
  workerRecorded: z.boolean().nullable(),
  workerState: z.string().nullable(),
  detail: z.string(),
}).meta({ id: 'DispositionEvidence' });

export const ExecutionStatusSchema = z.enum(EXECUTION_STATUSES).meta({ id: 'ExecutionStatus' });
export const EffectStatusSchema = z.enum(EFFECT_STATUSES).meta({ id: 'EffectStatus' });
export const TerminalReasonSchema = z.enum(TERMINAL_REASONS).meta({ id: 'TerminalReason' });
export const RedriveModeSchema = z.enum(REDRIVE_MODES).meta({ id: 'RedriveMode' });

export const ExecutionRecordView = z
  .object({
    tenantId: z.string(),
    executionId: z.string(),
    executionKey: z.string().nullable(),
    pipeline: z.string(),
    pipelineVersion: z
      .number()
      .int()
      .meta({ description: 'the pipeline definition version the execution is pinned to: every step runs as that version defines it' }),
    definitionFingerprint: z.string().nullable().meta({
      description: "fingerprint of the pinned definition's shape (step names, transports, Command flags, order); null on executions from before versions",
    }),
    workflowId: z.string().meta({ description: 'Temporal workflowId: pipeline/{tenantId}/{executionId}' }),
    status: ExecutionStatusSchema,
    version: z.number().int().meta({ description: 'bumped exactly once per committed state transition; send it back as expectedVersion' }),
    stepCount: z.number().int(),
    currentStepIndex: z.number().int(),
    attempt: z.number().int().meta({ description: 'the committed attempt of the current step' }),
    failedStepIndex: z.number().int().nullable(),
    nextDueAt: Timestamp.nullable().meta({ description: 'when a committed retry is due' }),
    runId: z.string().nullable(),
    redriveCount: z.number().int(),
    correlationId: z.string().nullable(),
    resourceType: z.string().nullable(),
    resourceName: z.string().nullable(),
    terminalReason: TerminalReasonSchema.nullable(),
    lastErrorCode: z.string().nullable(),
    lastErrorMessage: z.string().nullable(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    segmentInputBytes: z.number().int().meta({ description: 'size of the persisted segment input, which is never returned' }),
    remoteCall: RemoteCallSchema.nullable().meta({ description: 'the remote call whose outcome is unknown, while REMOTE_OUTCOME_UNKNOWN' }),
    disposition: DispositionEvidenceSchema.optional().meta({
      description: 'REMOTE_OUTCOME_UNKNOWN only: the evidence to confirm a disposition with, read live from the worker',
    }),
  })
  .meta({ id: 'ExecutionRecord' });

export const StartExecutionResponse = ExecutionRecordView.extend({
  dispatch: z.enum(['started', 'pending', 'existing']),
  runId: z.string().nullable(),
}).meta({ id: 'StartExecutionResponse' });

export const ExistingExecutionResponse = z
  .object({
    tenantId: z.string(),
    executionId: z.string(),
    executionKey: z.string().nullable(),
    pipeline: z.string(),
    existing: z.literal(true),
    dispatch: z.literal('existing'),
  })
  .meta({
    id: 'ExistingExecution',
    description: 'what a submit token is told of an execution its executionKey names already; an admin token gets the StartExecutionResponse',
  });

export const ExecutionList = z.object({ items: z.array(ExecutionRecordView), nextCursor: z.string().nullable() }).meta({ id: 'ExecutionList' });

export const CommandEffectView = z
  .object({
    tenantId: z.string(),
    executionId: z.string(),
    stepIndex: z.number().int(),
    stepName: z.string(),
    status: EffectStatusSchema,
    attempt: z.number().int(),
    transitionKey: z.string(),
    errorCode: z.string().nullable(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    hasResult: z.boolean(),
  })
  .meta({ id: 'CommandEffect' });

export const EffectList = z.object({ items: z.array(CommandEffectView) }).meta({ id: 'CommandEffectList' });

export const DlqEnvelopeSchema = DlqEnvelope;

export const DlqList = z
  .object({
    items: z.array(
      z.object({
        id: z.number().int(),
        recordVersion: z.number().int(),
        redriven: z.boolean().meta({ description: "the execution's version has moved past the envelope's (re-driven since)" }),
        envelope: DlqEnvelopeSchema,
      }),
    ),
    nextCursor: z.string().nullable(),
  })
  .meta({ id: 'DlqList' });

export const RedriveAcceptedSchema = RedriveAccepted;

const StepList = z.object({ version: z.number().int(), steps: z.array(z.string()) });
/** PIPELINE_DEFINITION_CHANGED: how the pinned version and the current one differ. */
const DefinitionChangedFields = {
  pinnedVersion: z.number().int().optional().meta({ description: 'PIPELINE_DEFINITION_CHANGED: the version the execution is pinned to' }),
  currentVersion: z
    .number()
    .int()
    .nullable()
    .optional()
    .meta({ description: 'VERSION_MISMATCH: the stored record version; PIPELINE_DEFINITION_CHANGED: the pipeline version new executions use' }),
  resumeStep: z.string().nullable().optional().meta({ description: 'PIPELINE_DEFINITION_CHANGED: the name of the step the execution would resume' }),
  diff: z
    .object({
      from: StepList,
      to: StepList,
      appeared: z.array(z.string()),
      vanished: z.array(z.string()),
      moved: z.array(z.object({ step: z.string(), fromIndex: z.number().int(), toIndex: z.number().int() })),
    })
    .nullable()
    .optional()
    .meta({
      description:
        'PIPELINE_DEFINITION_CHANGED: steps that appeared, vanished or moved between the pinned and the current version (null when the pinned shape is unknown)',
    }),
};

export const RedrivePreviewSchema = z
  .union([
    z.object({
      admitted: z.literal(true),
      tenantId: z.string(),
      executionId: z.string(),
      version: z.number().int(),
      status: z.literal('QUEUED'),
      resumeStepIndex: z.number().int(),
      attempt: z.number().int(),
      mode: RedriveModeSchema,
      fromStatus: ExecutionStatusSchema,
      effectStatus: z.string().nullable(),
      pipelineVersion: z.number().int().meta({ description: 'the definition version the resumed run would follow' }),
      fromPipelineVersion: z.number().int().meta({ description: 'the definition version the execution is pinned to now' }),
      skippedSteps: z.array(z.string()).meta({
        description:
          'resumeUnderCurrentVersion: steps of the current version before the resume step that this execution never ran (inserted before the resume point); resuming skips them. Empty otherwise',
      }),
    }),
    z.object({
      admitted: z.literal(false),
      status: z.number().int(),
      code: z.string(),
      detail: z.string(),
      evidence: DispositionEvidenceSchema.optional().meta({ description: 'DISPOSITION_CONTRADICTED / DISPOSITION_EVIDENCE_UNAVAILABLE: what the worker said' }),
      ...DefinitionChangedFields,
    }),
  ])
  .meta({ id: 'RedrivePreview' });

export const ProblemSchema = z
  .object({
    ...DefinitionChangedFields,
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z
      .enum(Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]])
      .meta({ description: 'stable machine code; the error table of docs/api.md says what each means' }),
    issues: z.array(z.object({ path: z.string(), code: z.string(), message: z.string() })).optional(),
    // The extra fields some codes carry (the document forbade them before, and clients that validate failed on them).
    parameter: z.string().optional().meta({ description: 'INVALID_ID: the path parameter that is not a valid id' }),
    effectStatus: EffectStatusSchema.optional().meta({ description: "COMMAND_EFFECT_NOT_REDISPATCHABLE: the retained effect's status" }),
    evidence: z
      .record(z.string(), z.unknown())
      .optional()
      .meta({ description: "DISPOSITION_CONTRADICTED, DISPOSITION_EVIDENCE_UNAVAILABLE: what the worker's lookup said" }),
    checks: z.record(z.string(), z.string()).optional().meta({ description: 'NOT_READY: each readiness check, up or down' }),
    errors: z.record(z.string(), z.string()).optional().meta({ description: 'NOT_READY: why each down check is down' }),
  })
  .meta({ id: 'Problem' });

export { PublishOutcome as PublishOutcomeSchema } from '../service/checkpoints';

export const RejectList = z
  .object({
    items: z.array(
      z.object({
        id: z.number().int(),
        tenantId: z.string(),
        executionId: z.string(),
        transitionKey: z.string(),
        step: z.string(),
        itemKey: z.string().nullable(),
        errorCode: z.string(),
        reason: z.string(),
        fingerprint: z.string(),
        createdAtEpochMs: z.number().int(),
      }),
    ),
    nextCursor: z.string().nullable(),
  })
  .meta({ id: 'RejectList' });

const TriageSignal = z.object({ current: z.number(), previous: z.number(), trend: z.enum(['rising', 'falling', 'stable']) });
const Classification = z.enum(['systemic_execution_failure', 'admission_pressure', 'data_quality_drift', 'healthy']);

export const TriageSchema = z
  .object({
    windowSeconds: z.number(),
    classification: Classification,
    firstAction: z.string(),
    findings: z.array(z.object({ classification: Classification, firstAction: z.string(), detail: z.record(z.string(), z.unknown()) })),
    signals: z.object({ executionDlq: TriageSignal, itemRejects: TriageSignal, executionsSucceeded: TriageSignal, checkpointBacklog: TriageSignal }),
  })
  .meta({ id: 'Triage' });

export const PipelineList = z
  .object({
    items: z.array(
      z.object({
        pipeline: z.string(),
        currentVersion: z.number().int().nullable().meta({ description: 'the version new executions use; null when none is registered' }),
        versions: z.array(
          z.object({
            version: z.number().int(),
            registered: z.boolean(),
            newExecutions: z.boolean().meta({ description: 'false: registered only for the executions pinned to it' }),
            fingerprint: z.string().nullable(),
            steps: z.array(z.string()).nullable().meta({ description: 'step names in order; null when this service never saw the shape' }),
            unfinished: z
              .object({
                QUEUED: z.number().int(),
                RUNNING: z.number().int(),
                FAILED: z.number().int(),
                REMOTE_OUTCOME_UNKNOWN: z.number().int(),
                total: z.number().int(),
              })
              .meta({ description: "this tenant's executions pinned to the version that still need it" }),
          }),
        ),
      }),
    ),
  })
  .meta({ id: 'PipelineList' });
