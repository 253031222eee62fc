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
import { diffDefinitions, type PipelineRegistry } from '../pipeline/registry';
import type { DefinitionStore } from '../store/definition-store';

export async function checkDefinitionShapes(registry: PipelineRegistry, definitions: DefinitionStore, log: Log): Promise<void> {
  const refusals: string[] = [];
  const registered = registry.list();
  const warnings: Record<string, unknown>[] = [];
  for (const pipeline of registered) {
    const stored = await definitions.fingerprints(pipeline.name, pipeline.version);
    const previous = stored.filter((fingerprint) => fingerprint !== pipeline.fingerprint);
    if (previous.length === 0) continue;
    const steps = pipeline.steps.map((step) => step.name);
    const pinned = await definitions.pinnedShapes(pipeline.name, pipeline.version, pipeline.fingerprint);
    if (pinned.length > 0) {
      const shapes = await Promise.all(
        pinned.map(async ({ fingerprint, count }) => {
          const earlier = (await definitions.find(pipeline.name, pipeline.version, fingerprint))?.steps ?? null;
          return `${count} unfinished execution(s) are pinned to its earlier shape ${fingerprint} (${describeShapeChange(earlier, steps)})`;
        }),
      );
      refusals.push(`pipeline "${pipeline.name}" version ${pipeline.version} changed shape (fingerprint ${pinned[0].fingerprint} → ${pipeline.fingerprint}) while ${shapes.join(', and ')}`);
      continue;
    }
    // Nothing is pinned to the earlier shapes: warn at the start that brings a new one, not at every start after it.
    if (stored.includes(pipeline.fingerprint)) continue;
    const earlier = (await definitions.find(pipeline.name, pipeline.version, previous.at(-1)!))?.steps ?? null;
    warnings.push({
      event: 'pipeline_definition_changed_without_version',
      pipeline: pipeline.name,
      version: pipeline.version,
      fingerprint: pipeline.fingerprint,
      previousFingerprints: previous,
      change: describeShapeChange(earlier, steps),
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
    });
  }
}

/**
 * What changed between an earlier shape's step names and the registered ones, step by step:
 * `steps were [a, b], now [b, a]: moved a 1→2, b 2→1`. Steps are counted from 1.
 */
export function describeShapeChange(earlier: string[] | null, now: string[]): string {
  if (earlier === null) return `its earlier steps are not stored; now [${now.join(', ')}]`;
  const diff = diffDefinitions({ version: 0, steps: earlier }, { version: 0, steps: now });
  const parts = [
    ...diff.moved.map(({ step, fromIndex, toIndex }) => `moved ${step} ${fromIndex + 1}→${toIndex + 1}`),
    ...diff.appeared.map((step) => `added ${step} at ${now.indexOf(step) + 1}`),
    ...diff.vanished.map((step) => `removed ${step} (was ${earlier.indexOf(step) + 1})`),
  ];
  const what = parts.length > 0 ? parts.join(', ') : 'the same step names in the same order: a step changed transport or Command flag';
  return `steps were [${earlier.join(', ')}], now [${now.join(', ')}]: ${what}`;
}
