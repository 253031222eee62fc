/**
 * Re-drive: re-queue the same execution id as a new Temporal run that resumes from the
 * persisted segment input of the step to resume, guarded by `expectedVersion`.
 *
 * Checks run in a fixed order (auth and body are the API's): the execution exists
 * (404), the version matches (409 VERSION_MISMATCH), then state admission (409/422).
 * Admission is one statement (version bump, QUEUED, new attempt, audit row, dispatch
 * row); the Temporal start follows the commit, and the sweeper covers a failed start.
 * The DLQ is never read destructively, deleted from or replayed.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { ExecutionNotFoundError, ForbiddenError, PipelineError, RedriveRefusedError, TemporalUnavailableError, VersionMismatchError } from '../errors';
import type { Log } from '../log';
import type { Metrics } from '../metrics';
import type { PipelineRegistry } from '../pipeline/registry';
import type { StepDefinition } from '../pipeline/define';
import type { DefinitionStore } from '../store/definition-store';
import { effectKey, type CommandEffect, type EffectStore } from '../store/effect-store';
import type { AdmissionGuard, ExecutionRecord, ExecutionStatus, ExecutionStore } from '../store/execution-store';
import { withCallDeadline } from '../temporal/call-deadline';
import type { Dispatcher } from '../temporal/dispatcher';
import { ACTIVE_EXECUTION_STATUSES, isOneOf, type RedriveMode } from '../spec-words';
import { checkFailedAttemptEvidence } from './attempt-evidence';
import { checkDispositionAttestation } from './disposition';
import { redriveTarget, type RedriveTarget } from './redrive-definition';
import { traceCarrier } from '../trace-context';
import type { RedriveRequest } from '../contract/requests';
import type { RedriveAccepted } from '../contract/responses';
import type { Principal } from '../repair/principal';
import type { AesGcmCodec } from '../temporal/codec';
import { correctInput, correctionFacts, correctionView, repairAudit, type Correction } from '../repair/correct-input';

export type { RedriveMode };

export interface RedrivePlan {
  mode: RedriveMode;
  fromStatus: ExecutionStatus;
  resumeStepIndex: number;
  /** the attempt the resumed step will run as */
  attempt: number;
  /** the retained Command effect of the resume step, if any */
  effectStatus: string | null;
  /** the definition the run follows (pinned, or the current one under resumeUnderCurrentVersion) */
  target: RedriveTarget;
}

/** Records and Command effects read ahead for many checks (RedriveService.load). */
export interface Loaded {
  records: Map<string, ExecutionRecord>;
  /** by effectKey(executionId, step name) */
  effects: Map<string, CommandEffect>;
}

/**
 * How a re-drive's admission statement is sent, once every check has passed: given the item and
 * the statement (which takes a guard to compose onto it), it answers what the statement
 * answered. A bulk job's scope sends it with the job's gate (store/job-gate.ts) and waits out
 * the gate's "too soon".
 */
export type AdmissionScope = (
  item: { executionId: string; redriveId: string },
  admit: <G extends Record<string, unknown>>(guard: AdmissionGuard<G>) => Promise<ExecutionRecord | null>,
) => Promise<ExecutionRecord | null>;

export class RedriveService {
  constructor(
    private readonly store: ExecutionStore,
    private readonly effects: EffectStore,
    private readonly definitions: DefinitionStore,
    private readonly registry: PipelineRegistry,
    private readonly dispatcher: Dispatcher,
    private readonly client: Client,
    private readonly log: Log,
    private readonly metrics?: Metrics,
    /** the payload codec (pipeline.codec.keys): a corrected input's audit row is sealed with it */
    private readonly codec?: AesGcmCodec,
  ) {}

  /**
   * Checks 3–5. Throws a PipelineError with the check's status and code. `loaded`: the record
   * and Command effects already read (a bulk dry run reads them for all its items in two
   * statements); only checks that ask Temporal or a worker then do I/O.
   */
  async evaluate(tenantId: string, executionId: string, body: RedriveRequest, loaded?: Loaded): Promise<{ record: ExecutionRecord; plan: RedrivePlan }> {
    const record = loaded ? (loaded.records.get(executionId) ?? null) : await this.store.get(tenantId, executionId);
    if (!record) throw new ExecutionNotFoundError(tenantId, executionId);
    if (record.version !== body.expectedVersion) {
      throw new VersionMismatchError(executionId, record.version, `execution ${executionId} is at version ${record.version}, not ${body.expectedVersion}`);
    }
    this.registry.get(record.pipeline); // 422 UNKNOWN_PIPELINE: this service could not run the re-drive
    // The step to resume, in the definition the run will follow; a changed definition answers after state admission.
    const target = await redriveTarget(record, body.resumeUnderCurrentVersion === true, this.registry, this.definitions);
    const step = target instanceof PipelineError ? undefined : target.definition.steps[target.resumeStepIndex];
    const effect = !step?.command
      ? null
      : loaded
        ? (loaded.effects.get(effectKey(executionId, step.name)) ?? null)
        : await this.effects.get(tenantId, executionId, step.name);
    const mode = await this.admit(record, body, effect, step);
    if (target instanceof PipelineError) throw target;
    return {
      record,
      plan: {
        mode,
        fromStatus: record.status,
        resumeStepIndex: target.resumeStepIndex,
        attempt: record.attempt + 1,
        effectStatus: effect?.status ?? null,
        target,
      },
    };
  }

  /**
   * After checks 3–5: the corrected input (`inputPatch` / `input`) of the step to resume, or
   * null without one. 403 for a token that may not repair, 422 INPUT_TOO_LARGE / INPUT_INVALID.
   */
  correction(record: ExecutionRecord, plan: RedrivePlan, body: RedriveRequest, caller: Principal | undefined): Correction | null {
    const step = plan.target.definition.steps[plan.resumeStepIndex];
    return correctInput(body, record.segmentInput, { index: plan.resumeStepIndex, name: step.name, input: step.input }, caller);
  }

  /** Check 5, state admission: no active run, not SUCCEEDED, allowFailed, then the Command-effect and disposition rules. `effect`: the resume step's retained Command effect; `step`: the step to resume as the re-drive resolved it (its worker is the one the evidence checks ask). Returns the re-drive mode. */
  private async admit(record: ExecutionRecord, body: RedriveRequest, effect: CommandEffect | null, step: StepDefinition | undefined): Promise<RedriveMode> {
    const { executionId } = record;
    if (isOneOf(ACTIVE_EXECUTION_STATUSES, record.status) && (await this.runIsActive(record))) {
      throw new RedriveRefusedError('EXECUTION_ACTIVE', `execution ${executionId} has an active run (${record.status}); wait for it to end`);
    }
    if (record.status === 'SUCCEEDED') {
      throw new RedriveRefusedError('EXECUTION_SUCCEEDED', `execution ${executionId} SUCCEEDED; start a new execution instead`);
    }
    if (record.status === 'FAILED' && !body.allowFailed) {
      throw new RedriveRefusedError('ALLOW_FAILED_REQUIRED', `execution ${executionId} is FAILED; re-driving it needs allowFailed=true`);
    }
    if (record.status === 'FAILED' && !body.intent && effect) {
      throw new RedriveRefusedError(
        'RETRY_FAILED_COMMAND_INTENT_REQUIRED',
        `the failed step ${effect.stepIndex} is a Command whose effect is retained (${effect.status}); retrying it needs intent=RETRY_FAILED_COMMAND`,
      );
    }
    if (body.intent === 'RETRY_FAILED_COMMAND') {
      if (record.status !== 'FAILED')
        throw new RedriveRefusedError(
          'EXECUTION_NOT_FAILED',
          `execution ${executionId} is ${record.status}, not FAILED; RETRY_FAILED_COMMAND applies only to a FAILED execution`,
        );
      if (record.failedStepIndex === null)
        throw new RedriveRefusedError('FAILED_STEP_NOT_RETAINED', `execution ${executionId} does not retain the failed step index`);
      if (!(await this.store.supportsDurableRetryIntent()))
        throw new RedriveRefusedError(
          'RETRY_INTENT_UNSUPPORTED',
          'the execution store lacks durable retry intent support (fsync or synchronous_commit is off, or the store is in memory)',
        );
      // An IN_FLIGHT effect whose call was abandoned is released only by the operator's attestation, as for REMOTE_OUTCOME_UNKNOWN.
      const attested = effect?.status === 'IN_FLIGHT' && body.confirmedDisposition === 'NOT_APPLIED';
      if (effect && effect.status !== 'FAILED_RETRYABLE' && !attested) {
        // The run would stop at this effect with non_retryable and a new DLQ envelope: refuse now instead.
        const inFlight =
          effect.status === 'IN_FLIGHT'
            ? '; if you confirmed its call made no effect, send "confirmedDisposition": "NOT_APPLIED" (runbook: "A Command effect stuck IN_FLIGHT")'
            : '';
        throw new RedriveRefusedError(
          'COMMAND_EFFECT_NOT_REDISPATCHABLE',
          `the Command effect of step ${effect.stepIndex} is ${effect.status}; only a FAILED_RETRYABLE effect is redispatched${inFlight}`,
          { effectStatus: effect.status },
        );
      }
      await this.checkFailedAttempts(record, body, step); // 409 WORKER_RECORDED_FAILED_ATTEMPT, 503 when unknown
      return 'RETRY_FAILED_COMMAND';
    }
    if (record.status === 'REMOTE_OUTCOME_UNKNOWN') {
      if (!body.allowFailed)
        throw new RedriveRefusedError(
          'ALLOW_FAILED_REQUIRED',
          `execution ${executionId} is REMOTE_OUTCOME_UNKNOWN; re-driving it needs allowFailed=true and a confirmed disposition`,
        );
      if (body.confirmedDisposition !== 'NOT_APPLIED') {
        throw new RedriveRefusedError(
          'DISPOSITION_UNCONFIRMED',
          `confirm the original invocation cannot make effects first, then send "confirmedDisposition": "NOT_APPLIED"`,
        );
      }
      await checkDispositionAttestation(record, this.registry, body.overrideEvidence === true, { step }); // 409 DISPOSITION_CONTRADICTED, 503 when unknown
      return 'REMOTE_OUTCOME_UNKNOWN';
    }
    if (record.status !== 'FAILED') return 'ORDINARY';
    await this.checkFailedAttempts(record, body, step);
    return 'FAILED';
  }

  /** A FAILED remote step's identities, asked of the worker's lookup: one it recorded refuses the re-drive unless overridden (audited). */
  private checkFailedAttempts(record: ExecutionRecord, body: RedriveRequest, step: StepDefinition | undefined) {
    const override = body.confirmedDisposition === 'NOT_APPLIED' && body.overrideEvidence === true;
    return checkFailedAttemptEvidence(record, this.registry, this.store, override, { step });
  }

  /**
   * A QUEUED/RUNNING record is active while a dispatch is pending or its workflow runs.
   * Only Temporal's "not found" means no run; when Temporal cannot answer within
   * `pipeline.temporal.call-timeout` the re-drive is refused with 503 and nothing changes.
   */
  private async runIsActive(record: ExecutionRecord): Promise<boolean> {
    if (await this.store.pendingStart(record.tenantId, record.executionId)) return true;
    try {
      const description = await withCallDeadline(this.client, this.dispatcher.callTimeoutMs, () =>
        this.client.workflow.getHandle(record.workflowId).describe(),
      );
      return description.status.name === 'RUNNING';
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return false;
      this.log.warn({
        event: 'temporal_unavailable',
        tenantId: record.tenantId,
        executionId: record.executionId,
        check: 'run_active',
        error: err instanceof Error ? err.name : 'unknown',
      });
      throw new TemporalUnavailableError(`Temporal could not say whether execution ${record.executionId} has an active run; nothing was changed, retry later`);
    }
  }

  /**
   * `options.jobId`: the bulk job admitting this item, by name (its audit row, the record and
   * the run's attributes say so). `options.admitWithin`: how the admission statement is sent,
   * once every check has passed (a bulk job runs it inside its gate: store/job-gate.ts); by
   * default on its own.
   */
  async redrive(
    tenantId: string,
    executionId: string,
    body: RedriveRequest,
    principal: string,
    options: {
      jobId?: string;
      admitWithin?: AdmissionScope;
      /** the token's principal, for a corrected input (who may repair) */
      caller?: Principal;
    } = {},
  ): Promise<RedriveAccepted> {
    const { record, plan } = await this.evaluate(tenantId, executionId, body);
    const correction = this.correction(record, plan, body, options.caller);
    const redriveId = randomUUID();
    if (plan.target.switched) {
      const { name, version, fingerprint, steps } = plan.target.definition;
      await this.definitions.remember({ pipeline: name, version, fingerprint, steps: steps.map((step) => step.name) });
    }
    const spec = {
      redrive: { redriveId, intent: plan.mode, ...(options.jobId ? { jobId: options.jobId } : {}), ...(record.runId ? { redriveOf: record.runId } : {}) },
      trace: traceCarrier(),
      by: { principal, reason: body.reason.slice(0, 500) },
      ...(correction ? { correctedInput: { changedPaths: correction.changedPaths.slice(0, 50) } } : {}),
    };
    // The audit row keeps what was sent in `repair` (sealed when the codec is on), never in `request`.
    const { inputPatch: _patch, input: _input, ...request } = body;
    const audit = correction ? { input: correction.after, audit: await repairAudit(correction, this.codec) } : null;
    const admit = <G extends Record<string, unknown>>(guard?: AdmissionGuard<G>) =>
      this.store.admitRedrive(
        {
          tenantId,
          executionId,
          expectedVersion: body.expectedVersion,
          fromStatus: record.status,
          resumeStepIndex: plan.resumeStepIndex,
          resumeStepName: plan.target.resumeStepName,
          fromPipelineVersion: record.pipelineVersion,
          definition: plan.target.switched
            ? { version: plan.target.definition.version, fingerprint: plan.target.definition.fingerprint, stepCount: plan.target.definition.steps.length }
            : undefined,
          redriveId,
          principal,
          reason: body.reason,
          request,
          mode: plan.mode,
          confirmedDisposition: body.confirmedDisposition ?? null,
          dispatchSpec: spec,
          releaseAmbiguousEffect: plan.mode === 'REMOTE_OUTCOME_UNKNOWN' || (plan.mode === 'RETRY_FAILED_COMMAND' && plan.effectStatus === 'IN_FLIGHT'),
          lease: this.dispatcher.lease(),
          jobId: options.jobId ?? null,
          correction: audit,
        },
        guard,
      );
    const moved = options.admitWithin ? await options.admitWithin({ executionId, redriveId }, admit) : await admit();
    if (!moved) {
      const current = await this.store.get(tenantId, executionId);
      throw new VersionMismatchError(executionId, current?.version ?? null, `execution ${executionId} changed while the re-drive was admitted`);
    }
    const outcome = await this.dispatcher.launch(moved, redriveId, spec);
    this.metrics?.redrives.inc({ mode: plan.mode });
    this.log.info({
      event: 'execution_redrive_admitted',
      tenantId,
      executionId,
      correlationId: record.correlationId,
      redriveId,
      principal,
      mode: plan.mode,
      fromStatus: record.status,
      fromVersion: record.version,
      version: moved.version,
      resumeStepIndex: plan.resumeStepIndex,
      attempt: moved.attempt,
      dispatch: outcome.dispatch,
      fromPipelineVersion: record.pipelineVersion,
      pipelineVersion: moved.pipelineVersion,
      ...(options.jobId ? { jobId: options.jobId } : {}),
      ...(body.overrideEvidence ? { evidenceOverridden: true } : {}),
      ...(correction ? correctionFacts(correction) : {}),
    });
    return {
      tenantId,
      executionId,
      version: moved.version,
      status: 'QUEUED',
      pipelineVersion: moved.pipelineVersion,
      resumeStepIndex: plan.resumeStepIndex,
      attempt: moved.attempt,
      redriveId,
      runId: outcome.runId,
      dispatch: outcome.dispatch,
    };
  }

  /** What `preview` and `evaluate` take as already read, for the listed executions: two statements whatever their number. */
  async load(tenantId: string, executionIds: string[]): Promise<Loaded> {
    const [records, effects] = await Promise.all([this.store.getMany(tenantId, executionIds), this.effects.getMany(tenantId, executionIds)]);
    return { records, effects };
  }

  /** `?dryRun=true`: every check, nothing changes; checks 3–5 answer as data. `loaded`: see `evaluate`. */
  async preview(tenantId: string, executionId: string, body: RedriveRequest, loaded?: Loaded, caller?: Principal) {
    try {
      const { record, plan } = await this.evaluate(tenantId, executionId, body, loaded);
      const correction = this.correction(record, plan, body, caller);
      return {
        admitted: true as const,
        tenantId,
        executionId,
        version: record.version + 1,
        status: 'QUEUED' as const,
        resumeStepIndex: plan.resumeStepIndex,
        attempt: plan.attempt,
        mode: plan.mode,
        fromStatus: plan.fromStatus,
        effectStatus: plan.effectStatus,
        pipelineVersion: plan.target.definition.version,
        fromPipelineVersion: record.pipelineVersion,
        skippedSteps: plan.target.skippedSteps,
        ...(correction
          ? {
              correction: correctionView(correction, caller),
              checks: {
                admission: 'passed' as const,
                role: 'passed' as const,
                size: 'passed' as const,
                schema: plan.target.definition.steps[plan.resumeStepIndex].input ? ('passed' as const) : ('none declared' as const),
              },
            }
          : {}),
      };
    } catch (err) {
      // 5xx (Temporal cannot answer) is not an admission verdict: the dry run answers it as the real one would.
      // 5xx, and a token that may not repair (auth answers as usual), are not admission verdicts.
      if (!(err instanceof PipelineError) || err.status >= 500 || err instanceof ForbiddenError) throw err;
      return { admitted: false as const, status: err.status, code: err.code, detail: err.message, ...err.extra };
    }
  }
}
