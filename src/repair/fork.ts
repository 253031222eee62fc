/**
 * Fork: a new execution of the same pinned pipeline version, started at a step of another
 * whose input is still known, optionally with a corrected input. The inputs a fork can start
 * from: the parent's resume step (its failed step, or where it stopped), whose persisted segment
 * input the store keeps; and step 0, whose original input the first run's start event in
 * Temporal's history holds while the namespace retains it (the store's copy when the parent
 * never left step 0). Any other step is 422 STEP_INPUT_UNKNOWN.
 *
 * The fork is a record of its own (new executionId, so new transition identities and Command
 * effects for every step it runs); its lineage and audit (principal, reason, correction) sit in
 * `forked_from`, and its runs carry the PipelineForkedFrom search attribute. The parent's record,
 * effects and DLQ entries are only read.
 */
import type { Client } from '@temporalio/client';
import { fromPayloadsAtIndex, type LoadedDataConverter, type Payload } from '@temporalio/common';
import { ConflictError, ExecutionExistsError, ExecutionNotFoundError, ForbiddenError, PipelineError } from '../errors';
import { transitionKey, workflowIdFor } from '../ids';
import type { Log } from '../log';
import type { PipelineRegistry } from '../pipeline/registry';
import type { VersionedPipeline } from '../pipeline/define';
import { mayRepair, type Principal } from './principal';
import type { DefinitionStore } from '../store/definition-store';
import type { ExecutionRecord, ExecutionStore } from '../store/execution-store';
import type { HistoryStore } from '../store/history-store';
import { withCallDeadline } from '../temporal/call-deadline';
import type { AesGcmCodec } from '../temporal/codec';
import type { Dispatcher } from '../temporal/dispatcher';
import type { PipelineRunInput } from '../workflows/types';
import { ACTIVE_EXECUTION_STATUSES, isOneOf } from '../spec-words';
import type { ForkRequest } from '../contract/requests';
import { correctInput, correctionFacts, correctionView, repairAudit, type Correction } from './correct-input';

interface ForkPlan {
  parent: ExecutionRecord;
  definition: VersionedPipeline;
  stepIndex: number;
  inputSource: 'store' | 'temporal-history';
  input: unknown;
  correction: Correction | null;
}

export class ForkService {
  constructor(
    private readonly store: ExecutionStore,
    private readonly history: HistoryStore,
    private readonly definitions: DefinitionStore,
    private readonly registry: PipelineRegistry,
    private readonly dispatcher: Dispatcher,
    private readonly client: Client,
    private readonly log: Log,
    private readonly codec?: AesGcmCodec,
  ) {}

  /**
   * Checks in order: the token may repair (403), the parent exists (404) and has stopped (409
   * EXECUTION_ACTIVE), its pinned version is registered here (409 PIPELINE_DEFINITION_CHANGED),
   * the step is one whose input is known (422 STEP_INPUT_UNKNOWN), the new id is free (409
   * EXECUTION_EXISTS), then the correction's own checks (422).
   */
  private async plan(tenantId: string, executionId: string, body: ForkRequest, caller: Principal | undefined): Promise<ForkPlan> {
    if (!caller || !mayRepair(caller)) throw new ForbiddenError('a fork needs an admin or repair token');
    const parent = await this.store.get(tenantId, executionId);
    if (!parent) throw new ExecutionNotFoundError(tenantId, executionId);
    if (isOneOf(ACTIVE_EXECUTION_STATUSES, parent.status))
      throw new ConflictError(`execution ${executionId} is ${parent.status}; fork it once it has stopped`, 'EXECUTION_ACTIVE');
    const definition = this.registry.pinned(parent.pipeline, parent.pipelineVersion, parent.definitionFingerprint);
    if (!definition)
      throw new ConflictError(
        `pipeline "${parent.pipeline}" version ${parent.pipelineVersion}, which execution ${executionId} is pinned to, is not registered here`,
        'PIPELINE_DEFINITION_CHANGED',
        { pinnedVersion: parent.pipelineVersion },
      );
    const resumeStep = parent.failedStepIndex ?? parent.currentStepIndex;
    const stepIndex = body.fromStep ?? resumeStep;
    const known = await this.knownInput(parent, stepIndex, resumeStep);
    if (body.newExecutionId === executionId || (await this.store.get(tenantId, body.newExecutionId)))
      throw new ExecutionExistsError(tenantId, body.newExecutionId);
    const step = definition.steps[stepIndex];
    const correction = correctInput(body, known.input, { index: stepIndex, name: step.name, input: step.input }, caller);
    return { parent, definition, stepIndex, inputSource: known.source, input: correction ? correction.after : known.input, correction };
  }

  /** The input of `stepIndex` if it is still known: the resume step's from the store, step 0's from the first run's start event. */
  private async knownInput(parent: ExecutionRecord, stepIndex: number, resumeStep: number): Promise<{ input: unknown; source: ForkPlan['inputSource'] }> {
    const unknown = (why: string) =>
      new PipelineError(
        `the input of step ${stepIndex} of execution ${parent.executionId} is not known (${why}); fork from step ${resumeStep} (its persisted input) or step 0 (its original input, while Temporal keeps the first run)`,
        'STEP_INPUT_UNKNOWN',
      );
    if (stepIndex >= parent.stepCount) throw unknown(`the pipeline has ${parent.stepCount} steps`);
    // SUCCEEDED: the segment input is the last step's output, no step's input.
    if (stepIndex === resumeStep && parent.status !== 'SUCCEEDED') return { input: parent.segmentInput, source: 'store' };
    if (stepIndex !== 0) throw unknown('only the resume step and step 0 are');
    const first = (await this.history.history(parent.tenantId, parent.executionId)).runs.find((run) => run.dispatch_id === 'start')?.run_id;
    if (!first) throw unknown('the first run never started');
    try {
      const events = await withCallDeadline(this.client, this.dispatcher.callTimeoutMs, async () => {
        const history = await this.client.workflow.getHandle(parent.workflowId, first).fetchHistory();
        return history.events ?? [];
      });
      const payloads = events[0]?.workflowExecutionStartedEventAttributes?.input?.payloads;
      const converter = (this.client.workflow.options as { loadedDataConverter: LoadedDataConverter }).loadedDataConverter;
      const run = fromPayloadsAtIndex<PipelineRunInput>(converter.payloadConverter, 0, await decoded(converter, payloads ?? []));
      if (!run || run.resumeStepIndex !== 0) throw new Error('the first run did not start at step 0');
      return { input: run.input, source: 'temporal-history' };
    } catch (err) {
      if (err instanceof PipelineError) throw err;
      this.log.warn({
        event: 'fork_input_unavailable',
        tenantId: parent.tenantId,
        executionId: parent.executionId,
        error: err instanceof Error ? err.name : 'unknown',
      });
      throw unknown("Temporal's history of the first run cannot be read: retained no longer, or Temporal did not answer");
    }
  }

  /** The Command steps the fork will run again under its own keys (every Command step from its first step on). */
  private commandSteps(plan: ForkPlan, newExecutionId: string) {
    return plan.definition.steps
      .map((step, index) => ({ stepIndex: index, step: step.name, transitionKey: transitionKey(newExecutionId, index, 1), command: step.command === true }))
      .filter((step) => step.command && step.stepIndex >= plan.stepIndex)
      .map(({ command: _command, ...step }) => step);
  }

  /** `dryRun`: every check, and what the fork would do; nothing changes. */
  async preview(tenantId: string, executionId: string, body: ForkRequest, caller: Principal | undefined) {
    try {
      const plan = await this.plan(tenantId, executionId, body, caller);
      return {
        admitted: true as const,
        tenantId,
        executionId: body.newExecutionId,
        forkedFrom: { executionId, stepIndex: plan.stepIndex, version: plan.parent.version },
        pipeline: plan.definition.name,
        pipelineVersion: plan.definition.version,
        inputSource: plan.inputSource,
        commandSteps: this.commandSteps(plan, body.newExecutionId),
        ...(plan.correction ? { correction: correctionView(plan.correction, caller) } : {}),
      };
    } catch (err) {
      if (!(err instanceof PipelineError) || err.status >= 500 || err instanceof ForbiddenError) throw err;
      return { admitted: false as const, status: err.status, code: err.code, detail: err.message, ...err.extra };
    }
  }

  async fork(tenantId: string, executionId: string, body: ForkRequest, caller: Principal) {
    const plan = await this.plan(tenantId, executionId, body, caller);
    const { parent, definition, stepIndex } = plan;
    const forkedFrom = { executionId, stepIndex, version: parent.version };
    const repair = plan.correction ? await repairAudit(plan.correction, this.codec, { executionId, stepIndex }) : null;
    const spec = {
      forkedFrom,
      by: { principal: caller.name, reason: body.reason.slice(0, 500) },
      ...(plan.correction ? { correctedInput: { changedPaths: plan.correction.changedPaths.slice(0, 50) } } : {}),
    };
    await this.definitions.remember({
      pipeline: definition.name,
      version: definition.version,
      fingerprint: definition.fingerprint,
      steps: definition.steps.map((s) => s.name),
    });
    const record = await this.store.create(
      {
        tenantId,
        executionId: body.newExecutionId,
        executionKey: null,
        pipeline: definition.name,
        pipelineVersion: definition.version,
        definitionFingerprint: definition.fingerprint,
        workflowId: workflowIdFor(tenantId, body.newExecutionId),
        stepCount: definition.steps.length,
        input: plan.input ?? null,
        correlationId: parent.correlationId,
        resourceType: parent.resourceType,
        resourceName: parent.resourceName,
        fork: { stepIndex, from: { ...forkedFrom, principal: caller.name, reason: body.reason, repair, at: new Date().toISOString() } },
      },
      spec,
      this.dispatcher.lease(),
    );
    if (!record) throw new ExecutionExistsError(tenantId, body.newExecutionId);
    const outcome = await this.dispatcher.launch(record, 'start', spec);
    this.log.info({
      event: 'execution_forked',
      tenantId,
      executionId: body.newExecutionId,
      forkedFrom: executionId,
      stepIndex,
      parentVersion: parent.version,
      principal: caller.name,
      inputSource: plan.inputSource,
      dispatch: outcome.dispatch,
      ...(plan.correction ? correctionFacts(plan.correction) : {}),
    });
    return {
      tenantId,
      executionId: body.newExecutionId,
      version: record.version,
      status: 'QUEUED' as const,
      pipeline: definition.name,
      pipelineVersion: definition.version,
      forkedFrom,
      startStepIndex: stepIndex,
      runId: outcome.runId,
      dispatch: outcome.dispatch,
    };
  }
}

/**
 * Payloads as the client's codecs open them, the last codec first (as the SDK decodes): only
 * `@temporalio/common`'s public API, so the compiled service loads under plain Node's ESM.
 */
async function decoded(converter: LoadedDataConverter, payloads: Payload[]): Promise<Payload[]> {
  let opened = payloads;
  for (const codec of [...converter.payloadCodecs].reverse()) opened = await codec.decode(opened);
  return opened;
}
