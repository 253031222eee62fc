/**
 * Zod schemas of what the API answers. The OpenAPI document is generated from these
 * and from the request schemas the handlers parse with; tests validate real responses
 * against them, so the document cannot drift from the behaviour.
 */
import { z } from 'zod';
import { TerminalReasonSchema } from './fields';
import { DlqEnvelope } from './dlq-envelope';
import { ERROR_CODES, type ErrorCode } from '../errors';
import {
  ATTEMPT_OUTCOMES,
  CHECKPOINT_STATUSES,
  DISPATCH_OUTCOMES,
  EFFECT_STATUSES,
  EXECUTION_STATUSES,
  JOB_CONTROL_ACTIONS,
  REDRIVE_INTENTS,
  REDRIVE_JOB_STATUSES,
  REDRIVE_MODES,
} from '../spec-words';

const Timestamp = z.string().meta({ description: 'ISO-8601 timestamp', example: '2026-11-21T12:00:00.000Z' });

/** A parked execution's remote call, as stored in execution_record.remote_call and as answered. */
export const RemoteCallSchema = z.object({
  transitionKey: z.string(),
  protocol: z.string(),
  target: z.string(),
  startedAt: Timestamp,
  deadlineMs: z.number().int(),
  elapsedMs: z.number().int(),
  inProgress: z
    .object({
      state: z.enum(['IN_PROGRESS', 'UNCONFIRMED']).meta({
        description:
          'IN_PROGRESS: the worker answered "in progress" at least once (it took the call); UNCONFIRMED: every delivery got no answer (connection reset or answer broken off), so whether it reached the worker is unknown',
      }),
      answers: z.number().int(),
      firstAt: Timestamp,
      lastAt: Timestamp,
      budgetMs: z.number().int(),
      platform: z.string().nullable(),
    })
    .optional()
    .meta({
      description:
        'set when the execution parked because the worker kept answering "in progress" (or its deliveries kept getting no answer) for this identity past pipeline.orchestrator.worker.in-progress-budget: its outcome was not stored, or could not be heard',
    }),
});

const DispositionEvidenceSchema = RemoteCallSchema.extend({
  lookup: z.enum(['ANSWERED', 'NOT_OFFERED', 'UNAVAILABLE']),
  workerRecorded: z.boolean().nullable(),
  workerState: z.string().nullable(),
  detail: z.string(),
}).meta({ id: 'DispositionEvidence' });

/** WORKER_RECORDED_FAILED_ATTEMPT (and its DISPOSITION_EVIDENCE_UNAVAILABLE): what the worker's lookup said of a FAILED remote step's identities. */
const FailedAttemptEvidenceSchema = z
  .object({
    lookup: z.enum(['ANSWERED', 'UNAVAILABLE']),
    protocol: z.enum(['REST', 'GRPC']),
    transitionKey: z.string().meta({ description: 'the first identity the worker recorded (UNAVAILABLE: the first it could not be asked about)' }),
    workerRecorded: z.boolean().nullable(),
    workerState: z.string().nullable(),
    identities: z.array(
      z.object({
        transitionKey: z.string(),
        attempt: z.number().int(),
        firstSentAt: Timestamp.nullable().meta({
          description: 'when the service first sent a delivery of it; null when not noted (from before deliveries were noted)',
        }),
        workerRecorded: z.boolean().nullable(),
        workerState: z.string().nullable(),
      }),
    ),
    detail: z.string(),
  })
  .meta({ id: 'FailedAttemptEvidence' });

export const PendingStartSchema = z
  .object({
    dispatchId: z.string().meta({ description: "'start' for the execution's first run, else the re-drive's id" }),
    requestedAt: Timestamp.meta({ description: 'when the store admitted the start' }),
    startAttempts: z.number().int().meta({ description: 'start calls made so far (the sweeper retries a start that failed)' }),
    lastError: z.string().nullable().meta({ description: "why the last start call failed (Temporal's error, never payload data); null before a failure" }),
  })
  .meta({ id: 'PendingStart' });

export const ExecutionStatusSchema = z.enum(EXECUTION_STATUSES).meta({ id: 'ExecutionStatus' });
export const EffectStatusSchema = z.enum(EFFECT_STATUSES).meta({ id: 'EffectStatus' });
export { TerminalReasonSchema };
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
  })
  .meta({ id: 'ExecutionRecord' });

/** The single-record read: the record and what is read beside it for it alone (lists and the start's answer carry the record only). */
export const ExecutionRecordDetail = ExecutionRecordView.extend({
  disposition: DispositionEvidenceSchema.optional().meta({
    description: 'REMOTE_OUTCOME_UNKNOWN only: the evidence to confirm a disposition with, read live from the worker',
  }),
  pendingStart: PendingStartSchema.optional().meta({
    description:
      'QUEUED only, on the single-record read (not in lists): the start or re-drive the store admitted whose run it has not yet seen start. Under a backlog a healthy start shows here for about 30 s at most (until its first step, or the sweeper after the 30 s lease of its start, marks it); one that stays, its startAttempts rising with each retried start, says why in lastError (see the runbook, "Starts not reaching Temporal")',
  }),
}).meta({ id: 'ExecutionRecordDetail' });

export const StartExecutionResponse = ExecutionRecordView.extend({
  dispatch: z.enum([...DISPATCH_OUTCOMES, 'existing']),
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

/** What an admitted re-drive answers (the API's 202 body). */
export const RedriveAcceptedSchema = z
  .object({
    tenantId: z.string(),
    executionId: z.string(),
    version: z.number().int(),
    status: z.literal('QUEUED'),
    pipelineVersion: z.number().int().meta({ description: 'the definition version the resumed run follows' }),
    resumeStepIndex: z.number().int(),
    attempt: z.number().int(),
    redriveId: z.string(),
    runId: z.string().nullable(),
    dispatch: z.enum(DISPATCH_OUTCOMES),
  })
  .meta({ id: 'RedriveAccepted' });
export type RedriveAccepted = z.infer<typeof RedriveAcceptedSchema>;

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
      evidence: z
        .union([DispositionEvidenceSchema, FailedAttemptEvidenceSchema])
        .optional()
        .meta({ description: 'DISPOSITION_CONTRADICTED / WORKER_RECORDED_FAILED_ATTEMPT / DISPOSITION_EVIDENCE_UNAVAILABLE: what the worker said' }),
      effectStatus: EffectStatusSchema.optional().meta({ description: "COMMAND_EFFECT_NOT_REDISPATCHABLE: the retained effect's status" }),
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
      .meta({ description: "DISPOSITION_CONTRADICTED, WORKER_RECORDED_FAILED_ATTEMPT, DISPOSITION_EVIDENCE_UNAVAILABLE: what the worker's lookup said" }),
    jobStatus: z.enum(REDRIVE_JOB_STATUSES).optional().meta({ description: "JOB_FINISHED: the job's own status (ABORTED, COMPLETED or FAILED)" }),
    executionStatus: ExecutionStatusSchema.optional().meta({ description: "EXECUTION_NOT_SUCCEEDED: the execution's status" }),
    excluded: z.record(z.string(), z.number().int()).optional().meta({ description: 'SELECTION_EMPTY: how many executions the selection left out, by reason' }),
    keyId: z.string().optional().meta({ description: 'CODEC_PAYLOAD_UNREADABLE: the key id the payload names' }),
    checks: z.record(z.string(), z.string()).optional().meta({ description: 'NOT_READY: each readiness check, up or down' }),
    errors: z.record(z.string(), z.string()).optional().meta({ description: 'NOT_READY: why each down check is down' }),
    table: z.string().optional().meta({ description: 'INTERNAL (a stored row that no longer parses): its table' }),
    row: z.string().optional().meta({ description: 'INTERNAL (a stored row that no longer parses): its id' }),
    field: z.string().optional().meta({ description: 'INTERNAL (a stored row that no longer parses): its column' }),
  })
  .meta({ id: 'Problem' });

/** What a publish answers (the API's response body). */
export const PublishOutcomeSchema = z
  .object({
    handoffKey: z.string(),
    executionId: z.string().meta({ description: 'the execution the checkpoint is admitted as (derived from the handoff key)' }),
    duplicate: z.boolean(),
    status: z.enum(CHECKPOINT_STATUSES),
  })
  .meta({ id: 'PublishCheckpointResponse' });
export type PublishOutcome = z.infer<typeof PublishOutcomeSchema>;

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
            storedFingerprints: z.array(z.string()).meta({ description: 'every shape fingerprint stored under this version' }),
            codeMatches: z
              .boolean()
              .nullable()
              .meta({ description: "whether the running code's shape is every stored one; null when the version is not registered" }),
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
            unfinishedOtherShape: z.number().int().meta({
              description: 'unfinished executions pinned to another shape of this version: they cannot run on the code deployed now',
            }),
          }),
        ),
      }),
    ),
  })
  .meta({ id: 'PipelineList' });

export const ReadyView = z.object({ status: z.literal('ready'), checks: z.record(z.string(), z.enum(['up', 'down'])) });

export const RedriveJobDryRunSchema = z
  .object({
    dryRun: z.literal(true),
    matched: z.number().int(),
    wouldAdmit: z.number().int(),
    refused: z.record(z.string(), z.number().int()),
    excluded: z.record(z.string(), z.number().int()),
    sample: z
      .array(
        z.discriminatedUnion('admitted', [
          z.object({
            executionId: z.string(),
            expectedVersion: z.number().int(),
            admitted: z.literal(true),
            mode: RedriveModeSchema,
            resumeStepIndex: z.number().int(),
            attempt: z.number().int(),
          }),
          z.object({ executionId: z.string(), expectedVersion: z.number().int(), admitted: z.literal(false), code: z.string(), detail: z.string() }),
        ]),
      )
      .meta({ description: "up to 20 selected executions, each with the single re-drive's verdict" }),
    batchSize: z.number().int(),
    ratePerSecond: z.number(),
    estimatedSeconds: z.number(),
  })
  .meta({ id: 'RedriveJobDryRun' });

/** A control-log entry, as stored and as answered (`halt` and `fail` are the system's own). */
export const JobControlEntrySchema = z.object({
  action: z.enum(JOB_CONTROL_ACTIONS),
  principal: z.string(),
  at: z.string(),
  reason: z.string().optional(),
});

export const RedriveJobViewSchema = z
  .object({
    jobId: z.string(),
    tenantId: z.string(),
    status: z.enum(REDRIVE_JOB_STATUSES),
    haltReason: z.string().nullable(),
    failureReason: z.string().nullable().meta({ description: 'why a FAILED job could not go on (its activities gave up)' }),
    principal: z.string(),
    reason: z.string(),
    selection: z.record(z.string(), z.unknown()),
    allowFailed: z.boolean(),
    intent: z.enum(REDRIVE_INTENTS).nullable(),
    batchSize: z.number().int(),
    ratePerSecond: z.number(),
    canary: z.number().int().nullable(),
    haltOn: z.object({ failedAgainShare: z.number(), minFinished: z.number().int(), remoteOutcomeUnknown: z.boolean() }),
    createdAt: z.string(),
    updatedAt: z.string(),
    finishedAt: z.string().nullable(),
    workflowId: z.string(),
    dispatch: z.enum(DISPATCH_OUTCOMES),
    excluded: z.record(z.string(), z.number().int()),
    counts: z.object({
      selected: z.number().int(),
      processed: z.number().int(),
      remaining: z.number().int(),
      admitted: z.number().int(),
      skipped: z.number().int(),
      skippedByCode: z.record(z.string(), z.number().int()),
      succeeded: z.number().int(),
      failedAgain: z.number().int(),
      remoteOutcomeUnknown: z.number().int(),
      running: z.number().int(),
    }),
    rate: z.object({
      asked: z.number().meta({ description: 'the ceiling asked at creation, per second' }),
      achieved: z.number().nullable().meta({ description: 'items processed per second so far (null before the second)' }),
      current: z.number().meta({
        description: 'the rate the job allows itself now: below `asked` while it yields to live traffic (pipeline.redrive-job.yield-to-live), else `asked`',
      }),
    }),
    etaSeconds: z.number().nullable().meta({
      description:
        'seconds until the last item is processed at the current rate; null while PAUSED, and while no worker polls a task queue the job needs (`heldBack` says which); 0 once it ended',
    }),
    heldBack: z.string().nullable().meta({
      description:
        'why a RUNNING job admits nothing now, or below its asked rate, e.g. "no worker polls task queue pipeline-bulk, where its 50 re-driven runs wait: start one with pipeline.orchestrator.worker.runs=bulk or all" (a single job\'s read asks Temporal; a list does not), "waiting for room: 50 re-driven runs still running (batchSize 50)" or "yielding to live traffic: at most 12.5/s of the 50/s asked: …"',
    }),
    controlLog: z.array(JobControlEntrySchema),
  })
  .meta({ id: 'RedriveJob' });

export const RedriveJobList = z.object({ items: z.array(RedriveJobViewSchema), nextCursor: z.string().nullable() }).meta({ id: 'RedriveJobList' });

export const FailureGroupList = z
  .object({
    items: z.array(
      z.object({
        groupId: z.string(),
        signature: z.object({ step: z.string(), errorCode: z.string(), terminalReason: z.string(), transport: z.string(), message: z.string() }),
        count: z.number().int(),
        firstSeen: z.string(),
        lastSeen: z.string(),
        lastHour: z.object({
          count: z.number().int(),
          bucketMinutes: z.number().int(),
          buckets: z.array(z.number().int()),
          trend: z.enum(['rising', 'falling', 'stable']),
        }),
        selection: z.object({ groupId: z.string() }),
      }),
    ),
  })
  .meta({ id: 'FailureGroupList' });

/** The history route's response, as documented (exported so a test holds the route to it). */
export const ExecutionStory = z
  .object({
    tenantId: z.string(),
    executionId: z.string(),
    pipeline: z.string(),
    status: ExecutionStatusSchema,
    version: z.number().int(),
    pipelineVersion: z.number().int().meta({ description: 'the pipeline definition version the execution is pinned to' }),
    workflowId: z.string(),
    runs: z.array(z.record(z.string(), z.unknown())),
    refusedRuns: z
      .array(z.object({ runId: z.string(), ownerRunId: z.string().nullable(), recordStatus: z.string(), refusedAt: z.string(), note: z.string() }))
      .meta({ description: 'runs the orchestrator did not start (a Reset in the Temporal UI, a duplicate start), refused by their first step' }),
    attempts: z.array(
      z
        .object({
          stepIndex: z.number().int(),
          step: z.string().nullable(),
          pipelineVersion: z.number().int(),
          attempt: z.number().int(),
          transitionKey: z.string().meta({ example: 'order-2:1:3' }),
          outcome: z.enum(ATTEMPT_OUTCOMES),
          errorCode: z.string().nullable(),
          runId: z.string().nullable(),
          version: z.number().int(),
          committedAt: z.string(),
        })
        .catchall(z.unknown()),
    ),
    redrives: z.array(z.object({ mode: z.enum(REDRIVE_MODES) }).catchall(z.unknown())),
    dlq: z.array(z.record(z.string(), z.unknown())),
    disposition: z.record(z.string(), z.unknown()).nullable(),
  })
  .meta({
    id: 'ExecutionStory',
    description: 'runs, committed attempts, re-drives (with principal, reason and job), DLQ envelopes, disposition evidence; no payload data',
  });

/** The result route's answer: a SUCCEEDED execution's final output. */
export const ExecutionResultSchema = z
  .object({
    tenantId: z.string(),
    executionId: z.string(),
    pipeline: z.string(),
    pipelineVersion: z.number().int(),
    status: z.literal('SUCCEEDED'),
    updatedAt: z.string(),
    output: z.unknown().meta({ description: "the last step's output, as JSON (payload data)" }),
  })
  .meta({ id: 'ExecutionResult' });

/** What the start route answers with 200: the record for an admin token, only its id for a submit token. */
export const StartExecutionAnswer = z.union([StartExecutionResponse, ExistingExecutionResponse]);

/** Liveness. */
export const HealthView = z.object({ status: z.literal('ok') });
