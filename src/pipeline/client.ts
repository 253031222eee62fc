/**
 * A typed HTTP client for a team's own services: starts executions of its pipelines
 * through the service's API and reads their results, the input and output typed by the
 * pipeline value (the same one the team registers), so a service that submits work is
 * checked by the compiler as its tests are.
 *
 * ```ts
 * const client = pipelineClient({ baseUrl: 'http://orchestrator:8080/pipeline', token, tenantId: 'acme' });
 * const execution = await client.start(invoices, invoice, { executionKey: invoice.id });
 * const outcome = await client.result(execution, { waitMs: 30_000 });
 * if (outcome.status === 'SUCCEEDED') outcome.output; // typed as the pipeline's last output
 * ```
 *
 * It sends what `curl` would (README, "Writing a pipeline"); a refused request throws a
 * PipelineClientError with the answer's status and `code`, never a guess.
 */
import type { ExecutionStatus } from '../spec-words';
import type { InputOf, OutputOf, PipelineDefinition } from './define';

declare const clientOutput: unique symbol;

/** A started execution; `Out` is what `result` answers for it. */
export interface ClientExecution<Out = unknown> {
  tenantId: string;
  executionId: string;
  readonly [clientOutput]?: Out;
}

export interface PipelineClientOptions {
  /** the service's base URL with its prefix, e.g. `http://localhost:8080/pipeline` */
  baseUrl: string;
  /** a bearer token of the tenant (submit or admin) */
  token: string;
  tenantId: string;
  /** default the global fetch */
  fetch?: typeof fetch;
}

export interface ClientStartOptions {
  executionId?: string;
  /** dedupes a submission: the same key answers the existing execution */
  executionKey?: string;
  correlationId?: string;
}

/** What `result` found: the output once SUCCEEDED, else the status it is in (still running, or ended otherwise). */
export type ClientOutcome<Out> = { status: 'SUCCEEDED'; output: Out } | { status: Exclude<ExecutionStatus, 'SUCCEEDED'>; output?: undefined };

export class PipelineClientError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string | null,
  ) {
    super(message);
    this.name = 'PipelineClientError';
  }
}

export interface PipelineClient {
  start<P extends PipelineDefinition>(pipeline: P, input: InputOf<P>, options?: ClientStartOptions): Promise<ClientExecution<OutputOf<P>>>;
  /** the result, waiting up to `waitMs` (the API's `?wait=`, default 0) while the execution runs */
  result<Out>(execution: ClientExecution<Out>, options?: { waitMs?: number }): Promise<ClientOutcome<Out>>;
}

export function pipelineClient(options: PipelineClientOptions): PipelineClient {
  const call = options.fetch ?? fetch;
  const base = `${options.baseUrl.replace(/\/+$/, '')}/api/tenants/${encodeURIComponent(options.tenantId)}/executions`;
  const headers = { authorization: `Bearer ${options.token}`, accept: 'application/json, application/problem+json' };
  const read = async (res: Response) => (await res.json().catch(() => ({}))) as Record<string, unknown>;
  const refused = (what: string, res: Response, body: Record<string, unknown>) =>
    new PipelineClientError(
      `${what} answered ${res.status}${typeof body.detail === 'string' ? `: ${body.detail}` : ''}`,
      res.status,
      typeof body.code === 'string' ? body.code : null,
    );
  return {
    async start(pipeline, input, start = {}) {
      const res = await call(base, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ pipeline: pipeline.name, input, ...start }),
      });
      const body = await read(res);
      if (res.status !== 200 && res.status !== 202) throw refused(`start of ${pipeline.name}`, res, body);
      return { tenantId: options.tenantId, executionId: String(body.executionId) };
    },
    async result(execution, { waitMs = 0 } = {}) {
      const res = await call(`${base}/${encodeURIComponent(execution.executionId)}/result${waitMs > 0 ? `?wait=${Math.ceil(waitMs / 1000)}s` : ''}`, {
        headers,
      });
      const body = await read(res);
      if (res.status === 200) return { status: 'SUCCEEDED', output: body.output as never };
      const status = (body as { executionStatus?: unknown }).executionStatus;
      if (res.status === 409 && typeof status === 'string') return { status: status as Exclude<ExecutionStatus, 'SUCCEEDED'> };
      throw refused(`result of ${execution.executionId}`, res, body);
    },
  };
}
