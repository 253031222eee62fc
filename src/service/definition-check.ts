/**
 * Start-up check of the registered pipeline definitions against the shapes the store has
 * seen under the same (pipeline, version). A definition whose steps changed (inserted,
 * removed, renamed, reordered, another transport or Command flag) without a new version
 * would run the executions pinned to that version on a shape they were not admitted under:
 * with unfinished executions pinned to an earlier shape the service refuses to start (exit 2,
 * naming the pipeline, the version, the shape they are pinned to, the count and what changed
 * step by step); with none, it logs a warning once (the start that brings the new shape) and
 * forgets the earlier shapes no execution was admitted under, so one mistaken start leaves
 * nothing behind. Then every registered shape is stored, so the next start compares with it.
 */
import { ConfigError } from '../errors';
import type { Log } from '../log';
import { definitionShape } from '../pipeline/define';
import { diffDefinitions, type PipelineRegistry } from '../pipeline/registry';
import type { DefinitionShape, DefinitionStore, StepShape } from '../store/definition-store';

export async function checkDefinitionShapes(registry: PipelineRegistry, definitions: DefinitionStore, log: Log): Promise<void> {
  const refusals: string[] = [];
  const registered = registry.list();
  const warnings: Record<string, unknown>[] = [];
  for (const pipeline of registered) {
    const stored = await definitions.fingerprints(pipeline.name, pipeline.version);
    const previous = stored.filter((fingerprint) => fingerprint !== pipeline.fingerprint);
    if (previous.length === 0) continue;
    const now = definitionShape(pipeline.steps);
    const pinned = await definitions.pinnedShapes(pipeline.name, pipeline.version, pipeline.fingerprint);
    if (pinned.length > 0) {
      const shapes = await Promise.all(
        pinned.map(async ({ fingerprint, count }) => {
          const earlier = await definitions.find(pipeline.name, pipeline.version, fingerprint);
          return `${count} unfinished execution(s) are pinned to its earlier shape ${fingerprint} (${describeShapeChange(earlier, now)})`;
        }),
      );
      refusals.push(
        `pipeline "${pipeline.name}" version ${pipeline.version} changed shape (fingerprint ${pinned[0].fingerprint} → ${pipeline.fingerprint}) while ${shapes.join(', and ')}`,
      );
      continue;
    }
    // Nothing is pinned to the earlier shapes: warn at the start that brings a new one, not at every start after it.
    if (stored.includes(pipeline.fingerprint)) continue;
    const earlier = await definitions.find(pipeline.name, pipeline.version, previous.at(-1)!);
    warnings.push({
      event: 'pipeline_definition_changed_without_version',
      pipeline: pipeline.name,
      version: pipeline.version,
      fingerprint: pipeline.fingerprint,
      previousFingerprints: previous,
      change: describeShapeChange(earlier, now),
      detail: 'no unfinished execution is pinned to the earlier shape; give the next change a new version',
    });
  }
  if (refusals.length > 0) {
    throw new ConfigError(
      `${refusals.join('; ')}. Give the changed definition the next version and keep the old one registered until its executions finish (runbook, "Rolling out a pipeline change"), or deploy the earlier shape again`,
    );
  }
  for (const warning of warnings) log.warn(warning);
  for (const pipeline of registered) {
    // An earlier shape no execution was admitted under (a mistaken start) explains nothing: forget it.
    await definitions.forgetUnused(pipeline.name, pipeline.version, pipeline.fingerprint);
    await definitions.remember({
      pipeline: pipeline.name,
      version: pipeline.version,
      fingerprint: pipeline.fingerprint,
      steps: pipeline.steps.map((step) => step.name),
      shape: definitionShape(pipeline.steps),
    });
  }
}

/**
 * What changed between an earlier stored shape and the registered one, step by step:
 * `steps were [a, b], now [b, a]: moved a 1→2, moved b 2→1`, or `charge LOCAL → REST`.
 * Steps are counted from 1.
 */
export function describeShapeChange(earlier: Pick<DefinitionShape, 'steps' | 'shape'> | null, now: StepShape[]): string {
  const names = now.map((step) => step.name);
  if (earlier === null) return `its earlier steps are not stored; now [${names.join(', ')}]`;
  const diff = diffDefinitions({ version: 0, steps: earlier.steps }, { version: 0, steps: names });
  const flag = (command: boolean) => (command ? 'a Command' : 'not a Command');
  const parts = [
    ...diff.moved.map(({ step, fromIndex, toIndex }) => `moved ${step} ${fromIndex + 1}→${toIndex + 1}`),
    ...diff.appeared.map((step) => `added ${step} at ${names.indexOf(step) + 1}`),
    ...diff.vanished.map((step) => `removed ${step} (was ${earlier.steps.indexOf(step) + 1})`),
    ...now.flatMap((step) => {
      const before = earlier.shape?.find((candidate) => candidate.name === step.name);
      if (!before) return [];
      return [
        ...(before.transport !== step.transport ? [`${step.name} ${before.transport} → ${step.transport}`] : []),
        ...(before.command !== step.command ? [`${step.name} ${flag(before.command)} → ${flag(step.command)}`] : []),
      ];
    }),
  ];
  const what =
    parts.length > 0 ? parts.join(', ') : 'the same step names in the same order: a step changed transport or Command flag (stored before shapes named which)';
  return `steps were [${earlier.steps.join(', ')}], now [${names.join(', ')}]: ${what}`;
}
