/**
 * Which definition a re-drive resumes under, and at which step. An execution resumes
 * under the version it is pinned to while that version is registered (with the shape it
 * was admitted under). When it is not, the re-drive is refused with 409
 * `PIPELINE_DEFINITION_CHANGED` and the difference, unless the operator asked, audited,
 * for `resumeUnderCurrentVersion`: then the step to resume is found by name in the current
 * version, and every guard is checked against that step.
 */
import { ConflictError, type PipelineError } from '../errors';
import type { VersionedPipeline } from '../pipeline/define';
import { diffDefinitions, type DefinitionDiff, type PipelineRegistry } from '../pipeline/registry';
import type { DefinitionStore } from '../store/definition-store';
import type { ExecutionRecord } from '../store/execution-store';

export interface RedriveTarget {
  definition: VersionedPipeline;
  resumeStepIndex: number;
  resumeStepName: string;
  /** the execution moves from its pinned version to `definition` (the opt-in) */
  switched: boolean;
  /**
   * Steps of `definition` before the resume step that the execution never ran under its
   * pinned version (inserted before the resume point): resuming skips them. Empty unless switched.
   */
  skippedSteps: string[];
}

export class DefinitionChangedError extends ConflictError {
  constructor(detail: string, extra: { pinnedVersion: number; currentVersion: number; resumeStep: string | null; diff: DefinitionDiff | null }) {
    super(detail, 'PIPELINE_DEFINITION_CHANGED', extra);
  }
}

/** The re-drive's definition and resume step, or the refusal to answer once state admission passes. */
export async function redriveTarget(
  record: ExecutionRecord,
  resumeUnderCurrentVersion: boolean,
  registry: PipelineRegistry,
  definitions: DefinitionStore,
): Promise<RedriveTarget | PipelineError> {
  const pinnedIndex = record.failedStepIndex ?? record.currentStepIndex;
  const current = registry.get(record.pipeline);
  const pinned = registry.pinned(record.pipeline, record.pipelineVersion, record.definitionFingerprint);
  if (pinned && !resumeUnderCurrentVersion) {
    return {
      definition: pinned,
      resumeStepIndex: pinnedIndex,
      resumeStepName: pinned.steps[pinnedIndex]?.name ?? `#${pinnedIndex}`,
      switched: false,
      skippedSteps: [],
    };
  }

  const pinnedSteps =
    pinned?.steps.map((step) => step.name) ?? (await definitions.find(record.pipeline, record.pipelineVersion, record.definitionFingerprint))?.steps ?? null;
  const resumeStep = pinnedSteps?.[pinnedIndex] ?? null;
  const currentSteps = current.steps.map((step) => step.name);
  const diff = pinnedSteps ? diffDefinitions({ version: record.pipelineVersion, steps: pinnedSteps }, { version: current.version, steps: currentSteps }) : null;
  const extra = { pinnedVersion: record.pipelineVersion, currentVersion: current.version, resumeStep, diff };
  const newIndex = resumeStep === null ? -1 : currentSteps.indexOf(resumeStep);

  if (!resumeUnderCurrentVersion) {
    const gone = registry.find(record.pipeline, record.pipelineVersion)
      ? `whose shape changed without a new version (admitted under ${record.definitionFingerprint}, registered now ${registry.find(record.pipeline, record.pipelineVersion)!.fingerprint})`
      : 'which is no longer registered';
    const hint =
      newIndex >= 0
        ? `; step "${resumeStep}" is step ${newIndex} of version ${current.version}: send "resumeUnderCurrentVersion": true to resume it there`
        : '';
    return new DefinitionChangedError(
      `execution ${record.executionId} is pinned to pipeline "${record.pipeline}" version ${record.pipelineVersion}, ${gone} (current: version ${current.version})${hint}`,
      extra,
    );
  }
  if (newIndex < 0) {
    return new DefinitionChangedError(
      resumeStep === null
        ? `the step execution ${record.executionId} stopped at (index ${pinnedIndex} of version ${record.pipelineVersion}) is not known to this service, so it cannot be found by name in version ${current.version}`
        : `step "${resumeStep}" does not exist in pipeline "${record.pipeline}" version ${current.version}; the execution cannot resume under it`,
      extra,
    );
  }
  const ran = new Set(pinnedSteps!.slice(0, pinnedIndex));
  return {
    definition: current,
    resumeStepIndex: newIndex,
    resumeStepName: resumeStep!,
    switched: current.version !== record.pipelineVersion || current.fingerprint !== record.definitionFingerprint,
    skippedSteps: currentSteps.slice(0, newIndex).filter((name) => !ran.has(name)),
  };
}
