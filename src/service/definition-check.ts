/**
 * Start-up check of the registered pipeline definitions against the shapes the store has
 * seen under the same (pipeline, version). A definition whose steps changed (inserted,
 * removed, renamed, reordered, another transport or Command flag) without a new version
 * would run the executions pinned to that version on a shape they were not admitted under:
 * with unfinished executions pinned to the old shape the service refuses to start (exit 2,
 * naming the pipeline, the version and the count); with none, it logs a warning and the
 * new shape is stored. Then every registered shape is stored, so the next start compares
 * with it.
 */
import { ConfigError } from '../errors';
import type { Log } from '../log';
import type { PipelineRegistry } from '../pipeline/registry';
import type { DefinitionStore } from '../store/definition-store';

export async function checkDefinitionShapes(registry: PipelineRegistry, definitions: DefinitionStore, log: Log): Promise<void> {
  const refusals: string[] = [];
  const registered = registry.list();
  for (const pipeline of registered) {
    const previous = (await definitions.fingerprints(pipeline.name, pipeline.version)).filter((fingerprint) => fingerprint !== pipeline.fingerprint);
    if (previous.length === 0) continue;
    const pinned = await definitions.pinnedToOtherShape(pipeline.name, pipeline.version, pipeline.fingerprint);
    if (pinned > 0) {
      refusals.push(
        `pipeline "${pipeline.name}" version ${pipeline.version} changed shape (fingerprint ${previous.at(-1)} → ${pipeline.fingerprint}) ` +
          `while ${pinned} unfinished execution(s) are pinned to its earlier shape`,
      );
      continue;
    }
    log.warn({
      event: 'pipeline_definition_changed_without_version',
      pipeline: pipeline.name,
      version: pipeline.version,
      fingerprint: pipeline.fingerprint,
      previousFingerprints: previous,
      detail: 'no unfinished execution is pinned to the earlier shape; give the next change a new version',
    });
  }
  if (refusals.length > 0) {
    throw new ConfigError(
      `${refusals.join('; ')}. Give the changed definition the next version and keep the old one registered until its executions finish (runbook, "Rolling out a pipeline change"), or deploy the earlier shape again`,
    );
  }
  for (const pipeline of registered) {
    await definitions.remember({
      pipeline: pipeline.name,
      version: pipeline.version,
      fingerprint: pipeline.fingerprint,
      steps: pipeline.steps.map((step) => step.name),
    });
  }
}
