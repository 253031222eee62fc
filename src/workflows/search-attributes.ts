/** Custom search attributes, registered with the dev server and set on every run. */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const PipelineTenant = defineSearchAttributeKey('PipelineTenant', SearchAttributeType.KEYWORD);
export const PipelineExecutionId = defineSearchAttributeKey('PipelineExecutionId', SearchAttributeType.KEYWORD);
export const PipelineName = defineSearchAttributeKey('PipelineName', SearchAttributeType.KEYWORD);
export const PipelineStatus = defineSearchAttributeKey('PipelineStatus', SearchAttributeType.KEYWORD);

export const ALL_SEARCH_ATTRIBUTES = [PipelineTenant, PipelineExecutionId, PipelineName, PipelineStatus];
