/** The workflow bundle's entry point. */
export { pipelineWorkflow } from './pipeline-workflow';
export { redriveJobWorkflow } from './redrive-job-workflow';
