/**
 * Every route the service serves, declared once: its method and path (the key, under
 * `/{prefix}` unless it is one of ROOT_PATHS), its parameters, body and every answer it may give,
 * from the schemas in src/contract/. The OpenAPI document is generated from these declarations
 * (openapi.ts), the app mounts each handler by its key (mount.ts: inputs parsed with the declared
 * schemas, answers typed by the declared ones), and the CLI calls a route by its key (cli/client.ts,
 * types only: the CLI loads none of these declarations). Why this and not @hono/zod-openapi: docs/decisions.md,
 * "One declaration per route".
 */
import type { z } from 'zod';
import type { ZodOpenApiOperationObject } from 'zod-openapi';
import { ERROR_CODES, type ErrorCode } from '../errors';
import {
  ExecutionPath,
  GroupsQuery,
  JobPath,
  ListDlqQuery,
  ListExecutionsQuery,
  ListRedriveJobsQuery,
  ListRejectsQuery,
  RedriveQuery,
  ResultQuery,
  TenantPath,
  TriageQuery,
} from '../contract/parameters';
import {
  CodecRequest,
  ForkRequest,
  JobControlRequest,
  PublishCheckpointRequest,
  RedriveJobRequest,
  RedriveRequest,
  StartExecutionRequest,
} from '../contract/requests';
import {
  DlqList,
  EffectList,
  ExecutionList,
  ExecutionRecordDetail,
  ExecutionResultSchema,
  ExecutionStory,
  FailureGroupList,
  HealthView,
  PipelineList,
  ProblemSchema,
  PublishOutcomeSchema,
  ReadyView,
  RedriveAcceptedSchema,
  ForkAcceptedSchema,
  ForkPreviewSchema,
  ExecutionFixtureSchema,
  RedriveJobDryRunSchema,
  RedriveJobList,
  RedriveJobViewSchema,
  RedrivePreviewSchema,
  RejectList,
  StartExecutionAnswer,
  StartExecutionResponse,
  TriageSchema,
} from '../contract/responses';

/** A JSON body or answer of `schema` (its type is kept: handlers and the CLI are typed by it). */
const json = <S extends z.ZodType>(schema: S) => ({ content: { 'application/json': { schema } } });
/** A request body the route cannot do without (400 without it). */
const requiredBody = <S extends z.ZodType>(schema: S) => ({ required: true, ...json(schema) });

/** The HTTP status of an error code, as the key of a response (`'404'`). */
type StatusOf<C extends ErrorCode> = `${(typeof ERROR_CODES)[C]['status']}`;
type ProblemResponse = {
  description: string;
  content: { 'application/problem+json': { schema: typeof ProblemSchema } };
};
/**
 * The problem+json responses for these codes, one per status, each described from
 * ERROR_CODES (so the document says what the code means, in the words the errors use).
 */
function problems<C extends ErrorCode>(...codes: C[]): { [S in StatusOf<C>]: ProblemResponse } {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERROR_CODES[code].status, [...(byStatus.get(ERROR_CODES[code].status) ?? []), code]);
  return Object.fromEntries(
    [...byStatus].map(([status, group]) => [
      String(status),
      {
        description: group.map((code) => `${code}: ${ERROR_CODES[code].title}`).join('; '),
        content: { 'application/problem+json': { schema: ProblemSchema } },
      },
    ]),
  ) as { [S in StatusOf<C>]: ProblemResponse };
}
// INTERNAL is what a stored row that no longer parses answers (naming table, row and field): a
// defect to report, stated so a client knows its shape; schemathesis still fails on any 5xx.
const common = problems('INVALID_ID', 'VALIDATION_FAILED', 'INVALID_JSON', 'INVALID_CURSOR', 'UNAUTHORIZED', 'FORBIDDEN', 'STORE_UNAVAILABLE', 'INTERNAL');
/** What every route with a JSON body can answer about the body itself. */
const bodyErrors = problems('BODY_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE');

/** `pause`, `resume` and `abort` of a bulk re-drive job: one declaration, three routes. */
function jobControl(action: 'pause' | 'resume' | 'abort') {
  return {
    summary: `${action[0].toUpperCase()}${action.slice(1)} a bulk re-drive job`,
    requestParams: { path: JobPath },
    requestBody: { required: false, ...json(JobControlRequest) },
    responses: {
      '200': { description: 'the job after the change (a repeated pause or resume answers it unchanged)', ...json(RedriveJobViewSchema) },
      ...common,
      ...bodyErrors,
      ...problems('JOB_NOT_FOUND', 'JOB_FINISHED'),
    },
  };
}

/** The codec server's `decode` and `encode`. */
function codec(direction: 'decode' | 'encode') {
  return {
    summary: `Temporal codec server: ${direction} payloads (when pipeline.codec.keys is set; admin token without a tenant allow-list)`,
    requestBody: requiredBody(CodecRequest),
    responses: {
      '200': { description: `the payloads, ${direction}d in order`, ...json(CodecRequest) },
      ...problems('VALIDATION_FAILED', 'INVALID_JSON', 'UNAUTHORIZED', 'FORBIDDEN', 'CODEC_PAYLOAD_UNREADABLE'),
      ...bodyErrors,
    },
  };
}

/**
 * The routes, keyed `METHOD /path` (`{name}` marks a path parameter). The key is the route's
 * identity everywhere: `mount(app, key, handler)` in the service, `client.call(key, …)` in the CLI.
 */
export const ROUTES = {
  'POST /api/tenants/{tenantId}/executions': {
    summary: 'Start an execution',
    requestParams: { path: TenantPath },
    requestBody: requiredBody(StartExecutionRequest),
    responses: {
      '202': { description: 'admitted; the run is started or pending', ...json(StartExecutionResponse) },
      '200': {
        description: 'an execution with this executionKey exists already: the record for an admin token, only its id for a submit token',
        ...json(StartExecutionAnswer),
      },
      ...common,
      ...bodyErrors,
      ...problems('EXECUTION_EXISTS', 'UNKNOWN_PIPELINE'),
    },
  },
  'GET /api/tenants/{tenantId}/executions/{executionId}/result': {
    summary: 'Read the final output of a SUCCEEDED execution',
    description: [
      "The only route that answers payload data: the last step's output, as the store keeps it (in clear; the payload codec",
      'seals only what is sent to Temporal). A submit token of the tenant or an admin token. Never logged; Cache-Control: no-store.',
      '`wait` long-polls until the execution ends or the wait passes (at most 60s); a QUEUED, RUNNING, FAILED or',
      'REMOTE_OUTCOME_UNKNOWN execution then answers 409 EXECUTION_NOT_SUCCEEDED with `executionStatus`.',
    ].join(' '),
    requestParams: { path: ExecutionPath, query: ResultQuery },
    responses: {
      '200': { description: 'the final output', ...json(ExecutionResultSchema) },
      ...common,
      ...problems('EXECUTION_NOT_FOUND', 'EXECUTION_NOT_SUCCEEDED'),
    },
  },
  'GET /admin/tenants/{tenantId}/executions': {
    summary: 'List executions, newest first',
    requestParams: { path: TenantPath, query: ListExecutionsQuery },
    responses: { '200': { description: 'a page of records', ...json(ExecutionList) }, ...common },
  },
  'GET /admin/tenants/{tenantId}/executions/{executionId}': {
    summary: 'Read an ExecutionRecord',
    requestParams: { path: ExecutionPath },
    responses: {
      '200': { description: 'the record (no payloads), with what is read for it alone', ...json(ExecutionRecordDetail) },
      ...common,
      ...problems('EXECUTION_NOT_FOUND'),
    },
  },
  'GET /admin/tenants/{tenantId}/executions/{executionId}/effects': {
    summary: 'List the Command effects of an execution',
    requestParams: { path: ExecutionPath },
    responses: {
      '200': { description: 'one entry per Command step that claimed its effect', ...json(EffectList) },
      ...common,
      ...problems('EXECUTION_NOT_FOUND'),
    },
  },
  'POST /admin/tenants/{tenantId}/executions/{executionId}/redrive': {
    summary: 'Re-drive an execution',
    description: [
      'Re-queues the same execution id as a new Temporal run resuming from the persisted input of the step to resume. Checks,',
      'in order: auth (401/403), body (415/413/400), existence (404), expectedVersion (409 VERSION_MISMATCH with',
      'currentVersion), state admission (409 EXECUTION_ACTIVE, EXECUTION_SUCCEEDED, ALLOW_FAILED_REQUIRED,',
      'RETRY_FAILED_COMMAND_INTENT_REQUIRED, COMMAND_EFFECT_NOT_REDISPATCHABLE, DISPOSITION_UNCONFIRMED,',
      'DISPOSITION_CONTRADICTED or, for a FAILED remote step, WORKER_RECORDED_FAILED_ATTEMPT with the worker evidence; 422 EXECUTION_NOT_FAILED, FAILED_STEP_NOT_RETAINED,',
      'RETRY_INTENT_UNSUPPORTED; 503 DISPOSITION_EVIDENCE_UNAVAILABLE when the worker lookup cannot be reached,',
      'TEMPORAL_UNAVAILABLE when Temporal cannot say whether a run is active). `overrideEvidence: true` (audited) passes the',
      'two disposition checks. The DLQ is never touched.',
      '`inputPatch` (an RFC 7396 merge patch) or `input` (a replacement) corrects the input of the step it resumes, after every',
      'check above: only with allowFailed=true (400 otherwise), admin or repair tokens only (403), 422 INPUT_TOO_LARGE over the',
      "64 KiB input limit, 422 INPUT_INVALID (with issues) against the step's declared input schema. The Command-effect rules",
      'are unchanged. Audited (the patch sealed by the payload codec when it is on); the dry run answers the changed paths and',
      'fingerprints, and the values only to a token with readPayloads.',
    ].join(' '),
    requestParams: { path: ExecutionPath, query: RedriveQuery },
    requestBody: requiredBody(RedriveRequest),
    responses: {
      '202': { description: 'admitted', ...json(RedriveAcceptedSchema) },
      '200': { description: 'dryRun=true: what would happen', ...json(RedrivePreviewSchema) },
      ...common,
      ...bodyErrors,
      ...problems(
        'EXECUTION_NOT_FOUND',
        'VERSION_MISMATCH',
        'EXECUTION_ACTIVE',
        'EXECUTION_SUCCEEDED',
        'ALLOW_FAILED_REQUIRED',
        'RETRY_FAILED_COMMAND_INTENT_REQUIRED',
        'COMMAND_EFFECT_NOT_REDISPATCHABLE',
        'DISPOSITION_UNCONFIRMED',
        'DISPOSITION_CONTRADICTED',
        'WORKER_RECORDED_FAILED_ATTEMPT',
        'PIPELINE_DEFINITION_CHANGED',
        'EXECUTION_NOT_FAILED',
        'FAILED_STEP_NOT_RETAINED',
        'RETRY_INTENT_UNSUPPORTED',
        'INPUT_TOO_LARGE',
        'INPUT_INVALID',
        'DISPOSITION_EVIDENCE_UNAVAILABLE',
        'TEMPORAL_UNAVAILABLE',
        'STORE_UNAVAILABLE',
      ),
    },
  },
  'GET /admin/tenants/{tenantId}/executions/{executionId}/fixture': {
    summary: 'A FAILED execution as a test fixture (payload values: tokens with readPayloads only)',
    description: [
      'One JSON document: pipeline and pinned version, the failed step and its persisted input, each committed attempt with its',
      "error code (the last with the execution's error message), the remote call's metadata, and the corrected inputs re-drives",
      'sent, opened by the codec. 403 for a token without readPayloads; 422 PAYLOAD_UNREADABLE when the codec cannot open a',
      "sealed value (its key id is no longer configured). The testing module's fromFixture(file) replays it in memory.",
    ].join(' '),
    requestParams: { path: ExecutionPath },
    responses: {
      '200': { description: 'the fixture', ...json(ExecutionFixtureSchema) },
      ...common,
      ...problems('EXECUTION_NOT_FOUND', 'EXECUTION_NOT_FAILED', 'PAYLOAD_UNREADABLE'),
    },
  },
  'POST /admin/tenants/{tenantId}/executions/{executionId}/fork': {
    summary: 'Fork an execution: a new execution of the same pinned version from one of its steps',
    description: [
      'Starts `newExecutionId` on the pipeline version the execution is pinned to, at `fromStep` (default its resume step), with',
      "that step's known input: the resume step's persisted input, or step 0's original input while Temporal keeps the first run",
      '(any other step: 422 STEP_INPUT_UNKNOWN), optionally corrected by `inputPatch` / `input` as on a re-drive. Admin or repair',
      'tokens only. Checks, in order: auth (401/403), body (415/413/400), existence (404), the execution has stopped (409',
      'EXECUTION_ACTIVE), its pinned version is registered (409 PIPELINE_DEFINITION_CHANGED), the input is known (422), the new id',
      'is free (409 EXECUTION_EXISTS), the correction (422 INPUT_TOO_LARGE, INPUT_INVALID). The new record keeps',
      '`forkedFrom { executionId, stepIndex, version }`, its runs the PipelineForkedFrom search attribute; every step runs under the',
      "new execution's own transition identities. The parent's record, effects and DLQ entries are never touched.",
      '`?dryRun=true` (or `dryRun: true`) answers the plan, with every Command step the fork runs again under its new key.',
    ].join(' '),
    requestParams: { path: ExecutionPath, query: RedriveQuery },
    requestBody: requiredBody(ForkRequest),
    responses: {
      '202': { description: 'the fork, started (or pending: the sweeper starts it)', ...json(ForkAcceptedSchema) },
      '200': { description: 'dry run: what the fork would do, or the check that refuses it', ...json(ForkPreviewSchema) },
      ...common,
      ...bodyErrors,
      ...problems(
        'EXECUTION_NOT_FOUND',
        'EXECUTION_ACTIVE',
        'PIPELINE_DEFINITION_CHANGED',
        'EXECUTION_EXISTS',
        'STEP_INPUT_UNKNOWN',
        'INPUT_TOO_LARGE',
        'INPUT_INVALID',
        'STORE_UNAVAILABLE',
      ),
    },
  },
  'POST /api/tenants/{tenantId}/checkpoints': {
    summary: 'Publish a checkpoint',
    description: 'Accepted into a durable outbox and admitted as an execution (executionKey = handoffKey). A handoff key seen before is suppressed.',
    requestParams: { path: TenantPath },
    requestBody: requiredBody(PublishCheckpointRequest),
    responses: {
      '202': { description: 'accepted; admission follows', ...json(PublishOutcomeSchema) },
      '200': { description: 'a duplicate handoff key, suppressed', ...json(PublishOutcomeSchema) },
      ...common,
      ...bodyErrors,
      ...problems('UNKNOWN_PIPELINE'),
    },
  },
  'GET /admin/tenants/{tenantId}/rejects': {
    summary: 'List item reject envelopes (metadata only, read-only)',
    requestParams: { path: TenantPath, query: ListRejectsQuery },
    responses: { '200': { description: 'newest first', ...json(RejectList) }, ...common },
  },
  'GET /admin/tenants/{tenantId}/triage': {
    summary:
      "Triage one tenant's signals: DLQ growth (systemic failure), rejects rising while successes hold (data drift), checkpoint backlog (admission pressure)",
    requestParams: { path: TenantPath, query: TriageQuery },
    responses: { '200': { description: 'the last window against the one before', ...json(TriageSchema) }, ...common },
  },
  'GET /admin/triage': {
    summary: 'Triage across tenants (admin token without a tenant allow-list)',
    requestParams: { query: TriageQuery },
    responses: { '200': { description: 'the last window against the one before', ...json(TriageSchema) }, ...common },
  },
  'GET /admin/tenants/{tenantId}/pipelines': {
    summary: "Pipeline definition versions: registered, current, and how many of the tenant's executions still need each",
    requestParams: { path: TenantPath },
    responses: { '200': { description: 'by pipeline, versions ascending', ...json(PipelineList) }, ...common },
  },
  'GET /admin/tenants/{tenantId}/dlq': {
    summary: 'List Execution DLQ envelopes (read-only)',
    requestParams: {
      path: TenantPath,
      query: ListDlqQuery,
    },
    responses: { '200': { description: 'newest first', ...json(DlqList) }, ...common },
  },
  'GET /admin/tenants/{tenantId}/dlq/groups': {
    summary: 'Unredriven DLQ envelopes grouped by failure signature, largest first, with count, first/last seen and the last hour',
    requestParams: { path: TenantPath, query: GroupsQuery },
    responses: { '200': { description: 'the groups; selection is usable as a bulk re-drive selection', ...json(FailureGroupList) }, ...common },
  },
  'GET /admin/tenants/{tenantId}/executions/{executionId}/history': {
    summary: "An execution's story from the store: runs, committed attempts, re-drives, envelopes",
    requestParams: { path: ExecutionPath },
    responses: { '200': { description: 'the story', ...json(ExecutionStory) }, ...common, ...problems('EXECUTION_NOT_FOUND') },
  },
  'POST /admin/tenants/{tenantId}/redrive-jobs': {
    summary: 'Start a bulk re-drive job (dryRun=true: the plan, nothing changes)',
    description: [
      'Selects unredriven DLQ envelopes by filter (or lists executions), at most 10,000, and re-drives them through the single',
      "re-drive's admission at ratePerSecond with at most batchSize runs in flight, each with the version read at selection;",
      "refused items are skipped with the re-drive's code. REMOTE_OUTCOME_UNKNOWN executions are never selected. canary and",
      'haltOn pause the job when re-driven items fail again.',
    ].join(' '),
    requestParams: { path: TenantPath, query: RedriveQuery },
    requestBody: requiredBody(RedriveJobRequest),
    responses: {
      '202': { description: 'the job, started (or pending: the sweeper starts it)', ...json(RedriveJobViewSchema) },
      '200': { description: 'dryRun=true: matched, wouldAdmit, refused by code, excluded, a sample plan', ...json(RedriveJobDryRunSchema) },
      ...common,
      ...bodyErrors,
      ...problems('SELECTION_EMPTY', 'SELECTION_TOO_LARGE', 'TEMPORAL_UNAVAILABLE'),
    },
  },
  'GET /admin/tenants/{tenantId}/redrive-jobs': {
    summary: 'List bulk re-drive jobs, newest first',
    requestParams: { path: TenantPath, query: ListRedriveJobsQuery },
    responses: {
      '200': { description: 'a page of jobs', ...json(RedriveJobList) },
      ...common,
    },
  },
  'GET /admin/tenants/{tenantId}/redrive-jobs/{jobId}': {
    summary: 'A bulk re-drive job: status, halt reason, counts, rate and ETA',
    requestParams: { path: JobPath },
    responses: { '200': { description: 'the job', ...json(RedriveJobViewSchema) }, ...common, ...problems('JOB_NOT_FOUND') },
  },
  'POST /admin/tenants/{tenantId}/redrive-jobs/{jobId}/pause': jobControl('pause'),
  'POST /admin/tenants/{tenantId}/redrive-jobs/{jobId}/resume': jobControl('resume'),
  'POST /admin/tenants/{tenantId}/redrive-jobs/{jobId}/abort': jobControl('abort'),
  'GET /healthz': {
    summary: 'Liveness: 200 while the process answers',
    security: [],
    responses: { '200': { description: 'alive', ...json(HealthView) } },
  },
  'GET /readyz': {
    summary: 'Readiness: Postgres and Temporal answer within pipeline.temporal.call-timeout and (worker roles) the worker is RUNNING',
    security: [],
    responses: { '200': { description: 'ready', ...json(ReadyView) }, ...problems('NOT_READY') },
  },
  'POST /codec/decode': codec('decode'),
  'POST /codec/encode': codec('encode'),
} satisfies Record<string, ZodOpenApiOperationObject>;

/** A route's key: `POST /admin/tenants/{tenantId}/executions/{executionId}/redrive`. */
export type RouteKey = keyof typeof ROUTES;
export type Routes = typeof ROUTES;

/** The paths served at the root, without `/{prefix}`. */
export const ROOT_PATHS = ['/healthz', '/readyz', '/codec/decode', '/codec/encode'];

/** A key's method and path. */
export function routeOf(key: RouteKey): { method: 'get' | 'post'; path: string } {
  const [method, path] = key.split(' ');
  return { method: method.toLowerCase() as 'get' | 'post', path };
}
