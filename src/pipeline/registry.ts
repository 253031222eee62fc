/**
 * The pipelines a worker can run, and the step plan handed to each workflow run.
 * The plan (names, transports, resolved retry policy, timeouts) travels in the
 * workflow input, so a run keeps the policy it started with across deploys.
 *
 * A pipeline may be registered in several versions at once (a deploy keeps the old one
 * for the executions still running on it). New executions use the highest registered
 * version (one marked `newExecutions: false` is skipped); an execution resolves every
 * step by (pipeline, its pinned version, step name).
 */
import type { Config } from '../config/config';
import { UnknownPipelineError } from '../errors';
import type { RetryPolicy } from '../retry';
import type { StepPlan } from '../workflows/types';
import { definePipeline, type PipelineDefinition, type StepDefinition, type VersionedPipeline } from './define';

/** Where a pinned step stands in this registry. */
export type StepResolution =
  | { found: true; step: StepDefinition; pipeline: VersionedPipeline }
  /** the pinned version is not registered here, or has no step of that name: the step is gone */
  | { found: false; gone: true; reason: string }
  /** the pinned version is newer than any registered here: this worker is behind a rollout */
  | { found: false; gone: false; reason: string };

export class PipelineRegistry {
  private readonly pipelines = new Map<string, Map<number, VersionedPipeline>>();

  constructor(
    private readonly config: Config,
    pipelines: PipelineDefinition[] = [],
  ) {
    for (const pipeline of pipelines) this.register(pipeline);
  }

  /**
   * Checks the definition and derives its fingerprint from the steps it has now: a
   * fingerprint already on the object is never trusted (`{ ...v1, steps: reordered }`
   * carries v1's).
   */
  register(definition: PipelineDefinition): void {
    const pipeline = definePipeline(definition);
    const versions = this.pipelines.get(pipeline.name) ?? new Map<number, VersionedPipeline>();
    if (versions.has(pipeline.version)) throw new TypeError(`pipeline "${pipeline.name}" version ${pipeline.version} is registered twice`);
    versions.set(pipeline.version, pipeline);
    this.pipelines.set(pipeline.name, versions);
  }

  /** Drops one version (the executions pinned to it can no longer run or be re-driven here). */
  unregister(name: string, version: number): boolean {
    const versions = this.pipelines.get(name);
    const removed = versions?.delete(version) ?? false;
    if (versions?.size === 0) this.pipelines.delete(name);
    return removed;
  }

  /** The version new executions use: the highest registered one not marked `newExecutions: false` (else the highest). */
  get(name: string): VersionedPipeline {
    const versions = this.pipelines.get(name);
    if (!versions) throw new UnknownPipelineError(name);
    const ordered = [...versions.values()].sort((a, b) => b.version - a.version);
    return ordered.find((pipeline) => pipeline.newExecutions !== false) ?? ordered[0];
  }

  /** One registered version, if it is. */
  find(name: string, version: number): VersionedPipeline | undefined {
    return this.pipelines.get(name)?.get(version);
  }

  /**
   * The definition an execution is pinned to, if it is registered with the shape the
   * execution was admitted under (`fingerprint` null = a record from before versions).
   */
  pinned(name: string, version: number, fingerprint: string | null): VersionedPipeline | undefined {
    const pipeline = this.find(name, version);
    return pipeline && (fingerprint === null || pipeline.fingerprint === fingerprint) ? pipeline : undefined;
  }

  has(name: string): boolean {
    return this.pipelines.has(name);
  }

  /** Every registered definition, by pipeline name then version. */
  list(): VersionedPipeline[] {
    return [...this.pipelines.values()].flatMap((versions) => [...versions.values()]).sort((a, b) => a.name.localeCompare(b.name) || a.version - b.version);
  }

  /** Registered versions of a pipeline, ascending. */
  versions(name: string): number[] {
    return [...(this.pipelines.get(name)?.keys() ?? [])].sort((a, b) => a - b);
  }

  /** The operator of a pinned step, found by name, never by position in another version. */
  resolve(name: string, version: number, stepName: string): StepResolution {
    const pipeline = this.find(name, version);
    if (pipeline) {
      const step = pipeline.steps.find((candidate) => candidate.name === stepName);
      if (step) return { found: true, step, pipeline };
      return { found: false, gone: true, reason: `pipeline "${name}" version ${version} has no step "${stepName}"` };
    }
    const registered = this.versions(name);
    if (registered.length === 0 || registered[registered.length - 1] < version) {
      return {
        found: false,
        gone: false,
        reason: `pipeline "${name}" version ${version} is not registered on this worker yet (registered: ${registered.join(', ') || 'none'})`,
      };
    }
    return { found: false, gone: true, reason: `pipeline "${name}" version ${version} is no longer registered (registered: ${registered.join(', ')})` };
  }

  private defaultTimeout(transport: StepDefinition['transport']): number {
    if (transport === 'REST') return this.config['pipeline.orchestrator.worker.rest.request-timeout'];
    if (transport === 'GRPC') return this.config['pipeline.orchestrator.worker.grpc.request-timeout'];
    return this.config['pipeline.orchestrator.worker.step-timeout'];
  }

  /** The per-step plan for a workflow run of one definition, with retry defaults resolved. */
  plan(pipeline: VersionedPipeline): StepPlan[] {
    const defaults: RetryPolicy = {
      limit: this.config['pipeline.defaults.retry-limit'],
      waitMs: this.config['pipeline.defaults.retry-wait-ms'],
      maxBackoffMs: this.config['pipeline.defaults.max-backoff'],
      jitter: this.config['pipeline.defaults.jitter'],
    };
    return pipeline.steps.map((step) => {
      const fast = this.takesFastPath(pipeline, step);
      return {
        name: step.name,
        transport: step.transport,
        command: step.command === true,
        retry: { ...defaults, ...pipeline.retry, ...step.retry },
        timeoutMs: step.timeoutMs ?? (fast ? this.config['pipeline.orchestrator.fast-path.max-step-timeout'] : this.defaultTimeout(step.transport)),
        heartbeatMs: this.config['pipeline.orchestrator.worker.heartbeat-timeout'],
        ...(step.transport === 'REST' || step.transport === 'GRPC'
          ? { inProgressBudgetMs: this.config['pipeline.orchestrator.worker.in-progress-budget'] }
          : {}),
        ...(fast ? { fastPath: true as const } : {}),
      };
    });
  }

  /**
   * Whether a step runs as a Temporal local activity (docs/decisions.md, "The fast path"): an
   * in-process step (LOCAL, FUNCTION) chosen by its own `fastPath`, else its pipeline's, else the
   * service's default, whose deadline is within pipeline.orchestrator.fast-path.max-step-timeout.
   * A remote step never does: its deadline and in-progress budget outlast a workflow task, and a
   * local activity cannot heartbeat.
   */
  private takesFastPath(pipeline: VersionedPipeline, step: StepDefinition): boolean {
    if (step.transport !== 'LOCAL' && step.transport !== 'FUNCTION') return false;
    if (!(step.fastPath ?? pipeline.fastPath ?? this.config['pipeline.orchestrator.fast-path'])) return false;
    return (step.timeoutMs ?? 0) <= this.config['pipeline.orchestrator.fast-path.max-step-timeout'];
  }
}

/** How two versions' step lists differ, by step name: what an operator needs before moving an execution across. */
export interface DefinitionDiff {
  from: { version: number; steps: string[] };
  to: { version: number; steps: string[] };
  /** steps of `to` that `from` lacks */
  appeared: string[];
  /** steps of `from` that `to` lacks */
  vanished: string[];
  /** steps in both whose index differs */
  moved: { step: string; fromIndex: number; toIndex: number }[];
}

export function diffDefinitions(from: { version: number; steps: string[] }, to: { version: number; steps: string[] }): DefinitionDiff {
  return {
    from,
    to,
    appeared: to.steps.filter((name) => !from.steps.includes(name)),
    vanished: from.steps.filter((name) => !to.steps.includes(name)),
    moved: from.steps.flatMap((step, fromIndex) => {
      const toIndex = to.steps.indexOf(step);
      return toIndex >= 0 && toIndex !== fromIndex ? [{ step, fromIndex, toIndex }] : [];
    }),
  };
}
