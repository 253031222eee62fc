/**
 * `pipeline-orchestrator`: the API a pipeline's authors write against (README, "Writing a
 * pipeline"). The testing kit is `pipeline-orchestrator/testing`.
 */
export {
  definePipeline,
  functionStep,
  grpcStep,
  localStep,
  NonRetryableError,
  NonRetryableException,
  pipeline,
  restStep,
  UserActionRequiredError,
  UserActionRequiredException,
  type FunctionContext,
  type FunctionHandler,
  type GrpcTarget,
  type JsonSafe,
  type Operator,
  type PipelineDefinition,
  type PipelineInput,
  type PipelineOptions,
  type PipelineOutput,
  type RejectOptions,
  type RestTarget,
  type StepContext,
  type StepDefinition,
  type StepOptions,
  type TypedPipeline,
  type VersionedPipeline,
} from './pipeline/define';
export {
  pipelineClient,
  PipelineClientError,
  type ClientExecution,
  type ClientOutcome,
  type ClientStartOptions,
  type PipelineClient,
  type PipelineClientOptions,
} from './pipeline/client';
