/**
 * Starting executions: admission (record + dispatch row in one statement), then the
 * Temporal start after commit. A repeated executionKey in a tenant returns the existing
 * execution instead of starting another.
 */
import { randomUUID } from 'node:crypto';
import { ExecutionExistsError } from '../errors';
import { workflowIdFor } from '../ids';
import type { Log } from '../log';
import type { Metrics } from '../metrics';
import type { PipelineRegistry } from '../pipeline/registry';
import type { DefinitionStore } from '../store/definition-store';
import type { ExecutionRecord, ExecutionStore } from '../store/execution-store';
import type { Dispatcher, DispatchOutcome } from '../temporal/dispatcher';
import { traceCarrier } from '../trace-context';
import type { StartExecutionRequest } from '../contract/requests';

export interface StartOutcome {
  created: boolean;
  record: ExecutionRecord;
  dispatch: DispatchOutcome['dispatch'] | 'existing';
  runId: string | null;
}

export class ExecutionService {
  constructor(
    private readonly store: ExecutionStore,
    private readonly definitions: DefinitionStore,
    private readonly registry: PipelineRegistry,
    private readonly dispatcher: Dispatcher,
    private readonly log: Log,
    private readonly metrics?: Metrics,
  ) {}

  async start(tenantId: string, request: StartExecutionRequest): Promise<StartOutcome> {
    // The execution is pinned to the version new executions use now (the highest registered).
    const pipeline = this.registry.get(request.pipeline);
    await this.definitions.remember({
      pipeline: pipeline.name,
      version: pipeline.version,
      fingerprint: pipeline.fingerprint,
      steps: pipeline.steps.map((step) => step.name),
    });
    // No read first: a taken executionKey makes the insert a no-op, and only then is it looked up.
    const executionId = request.executionId ?? randomUUID();
    const record = await this.store.create(
      {
        tenantId,
        executionId,
        executionKey: request.executionKey ?? null,
        pipeline: pipeline.name,
        pipelineVersion: pipeline.version,
        definitionFingerprint: pipeline.fingerprint,
        workflowId: workflowIdFor(tenantId, executionId),
        stepCount: pipeline.steps.length,
        input: request.input ?? null,
        correlationId: request.correlationId ?? null,
        resourceType: request.resource?.type ?? null,
        resourceName: request.resource?.name ?? null,
      },
      { trace: traceCarrier() },
      this.dispatcher.lease(),
    );
    if (!record) {
      // Lost a race on the same key, or the id is taken.
      const byKey = request.executionKey ? await this.store.getByKey(tenantId, request.executionKey) : null;
      if (byKey) return { created: false, record: byKey, dispatch: 'existing', runId: byKey.runId };
      throw new ExecutionExistsError(tenantId, executionId);
    }
    const outcome = await this.dispatcher.launch(record, 'start', {});
    this.metrics?.started.inc();
    this.log.info({
      event: 'execution_admitted',
      tenantId,
      executionId,
      correlationId: record.correlationId,
      pipeline: pipeline.name,
      pipelineVersion: pipeline.version,
      dispatch: outcome.dispatch,
    });
    return { created: true, record, dispatch: outcome.dispatch, runId: outcome.runId };
  }
}
