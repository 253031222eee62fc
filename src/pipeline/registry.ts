/**
 * The pipelines a worker can run, and the step plan handed to each workflow run.
 * The plan (names, transports, resolved retry policy, timeouts) travels in the
 * workflow input, so a run keeps the policy it started with across deploys.
 */
import type { Config } from '../config/config';
import { UnknownPipelineError } from '../errors';
import type { RetryPolicy } from '../retry';
import type { StepPlan } from '../workflows/types';
import type { PipelineDefinition, StepDefinition } from './define';

export class PipelineRegistry {
  private readonly pipelines = new Map<string, PipelineDefinition>();

  constructor(
    private readonly config: Config,
    pipelines: PipelineDefinition[] = [],
  ) {
    for (const pipeline of pipelines) this.register(pipeline);
  }

  register(pipeline: PipelineDefinition): void {
    if (this.pipelines.has(pipeline.name)) throw new TypeError(`pipeline "${pipeline.name}" is registered twice`);
    this.pipelines.set(pipeline.name, pipeline);
  }

  get(name: string): PipelineDefinition {
    const pipeline = this.pipelines.get(name);
    if (!pipeline) throw new UnknownPipelineError(name);
    return pipeline;
  }

  has(name: string): boolean {
    return this.pipelines.has(name);
  }

  step(pipeline: string, index: number): StepDefinition {
    const step = this.get(pipeline).steps[index];
    if (!step) throw new RangeError(`pipeline "${pipeline}" has no step ${index}`);
    return step;
  }

  private defaultTimeout(transport: StepDefinition['transport']): number {
    if (transport === 'REST') return this.config['pipeline.orchestrator.worker.rest.request-timeout'];
    if (transport === 'GRPC') return this.config['pipeline.orchestrator.worker.grpc.request-timeout'];
    return this.config['pipeline.orchestrator.worker.step-timeout'];
  }

  /** The per-step plan for a workflow run, with retry defaults resolved. */
  plan(name: string): StepPlan[] {
    const pipeline = this.get(name);
    const defaults: RetryPolicy = {
      limit: this.config['pipeline.defaults.retry-limit'],
      waitMs: this.config['pipeline.defaults.retry-wait-ms'],
      maxBackoffMs: this.config['pipeline.defaults.max-backoff'],
      jitter: this.config['pipeline.defaults.jitter'],
    };
    return pipeline.steps.map((step) => ({
      name: step.name,
      transport: step.transport,
      command: step.command === true,
      retry: { ...defaults, ...pipeline.retry, ...step.retry },
      timeoutMs: step.timeoutMs ?? this.defaultTimeout(step.transport),
      heartbeatMs: this.config['pipeline.orchestrator.worker.heartbeat-timeout'],
    }));
  }
}
