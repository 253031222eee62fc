/** Custom search attributes, registered with the dev server and set on every run. */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const PipelineTenant = defineSearchAttributeKey('PipelineTenant', SearchAttributeType.KEYWORD);
export const PipelineExecutionId = defineSearchAttributeKey('PipelineExecutionId', SearchAttributeType.KEYWORD);
export const PipelineName = defineSearchAttributeKey('PipelineName', SearchAttributeType.KEYWORD);
export const PipelineStatus = defineSearchAttributeKey('PipelineStatus', SearchAttributeType.KEYWORD);
/** On a re-drive's run: the runId of the run it re-drives (the execution's previous run). */
export const PipelineRedriveOf = defineSearchAttributeKey('PipelineRedriveOf', SearchAttributeType.KEYWORD);
/** On a run a bulk job re-drove, and on the job's own workflow: the job id. */
export const PipelineRedriveJob = defineSearchAttributeKey('PipelineRedriveJob', SearchAttributeType.KEYWORD);

/** On a fork's runs: the executionId of the execution it was forked from. */
export const PipelineForkedFrom = defineSearchAttributeKey('PipelineForkedFrom', SearchAttributeType.KEYWORD);

/**
 * On a bulk re-drive job's own workflow: where the job stands, kept current by the workflow
 * (RUNNING, PAUSED, HALTED — paused by its canary or haltOn —, COMPLETED, ABORTED, FAILED).
 */
export const PipelineJobStatus = defineSearchAttributeKey('PipelineJobStatus', SearchAttributeType.KEYWORD);

export const ALL_SEARCH_ATTRIBUTES = [
  PipelineTenant,
  PipelineExecutionId,
  PipelineName,
  PipelineStatus,
  PipelineRedriveOf,
  PipelineRedriveJob,
  PipelineForkedFrom,
  PipelineJobStatus,
];
