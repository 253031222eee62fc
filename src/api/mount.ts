/**
 * Mounting a declared route (routes.ts): `mount(app, key, handler)` serves the route at the
 * path its key names, reads its inputs with the declared schemas (path ids with `pathId`, the
 * query with `readQuery`, the body with `readJson`: the same 4xx answers as before) and hands the
 * handler an `answer(status, body)` that accepts only a status the declaration documents as JSON,
 * with a body of that status's schema (compile time). Under the test runner every answer is also
 * checked at run time (`checkAnswers`): a status the declaration does not list, a thrown error
 * whose status it does not list, or a body its schema refuses fails the request with
 * UndeclaredAnswerError (500), so a test that reaches the answer fails.
 */
import type { Context, Env, Hono, MiddlewareHandler } from 'hono';
import type { z } from 'zod';
import { ERROR_CODES, PipelineError } from '../errors';
import { pathId, readJson, readQuery } from './request';
import { ROUTES, routeOf, type RouteKey, type Routes } from './routes';

/** The declared operation of a route. */
type Operation<K extends RouteKey> = Routes[K];
type Schema<T> = T extends z.ZodType ? T : never;

/** The parsed path parameters, query and body of route K. */
export interface Inputs<K extends RouteKey> {
  params: Operation<K> extends { requestParams: { path: infer P } } ? z.output<Schema<P>> : Record<string, never>;
  query: Operation<K> extends { requestParams: { query: infer Q } } ? z.output<Schema<Q>> : Record<string, never>;
  body: Operation<K> extends { requestBody: { content: { 'application/json': { schema: infer B } } } } ? z.output<Schema<B>> : undefined;
}

type Responses<K extends RouteKey> = Operation<K>['responses'];
/** The statuses route K answers with a JSON body (not problem+json), as numbers. */
export type JsonStatus<K extends RouteKey> = {
  [S in keyof Responses<K>]: Responses<K>[S] extends { content: { 'application/json': unknown } } ? (S extends `${infer N extends number}` ? N : never) : never;
}[keyof Responses<K>];
/** The schema route K declares for the JSON answer of status S. */
export type AnswerSchema<K extends RouteKey, S extends number> = Responses<K>[`${S}` & keyof Responses<K>] extends {
  content: { 'application/json': { schema: infer B } };
}
  ? Schema<B>
  : never;

declare const answered: unique symbol;
/** A response made by `answer`: the only thing a mounted handler may return. */
export type Answered = Response & { readonly [answered]: true };
/** Answers status S with body; S must be a declared JSON status of the route and body of its schema. */
export type Answer<K extends RouteKey> = <S extends JsonStatus<K>>(status: S, body: z.input<AnswerSchema<K, S>>) => Answered;

export type Handler<K extends RouteKey, E extends Env = any> = (c: Context<E>, inputs: Inputs<K>, answer: Answer<K>) => Answered | Promise<Answered>;

export interface MountOptions {
  /** where `app` is mounted in the service (e.g. `/admin`): the key's path must start with it, and is mounted relative to it */
  base?: string;
  /** a literal prefix before the path (e.g. `/pipeline` for a route mounted on the root app) */
  prefix?: string;
  /** middleware run before the handler (e.g. the bearer auth of a route on the root app) */
  before?: MiddlewareHandler[];
  /** the body limit, default readJson's 64 KiB */
  maxBytes?: number;
}

/**
 * An answer that is not the route's declaration's: a defect of the handler or of its declaration.
 * Only thrown with the checks on (tests), where its message (route, status, the schema's issue
 * paths; never values) is also written to stderr: the 500 it becomes says nothing of it.
 */
export class UndeclaredAnswerError extends Error {
  override name = 'UndeclaredAnswerError';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    process.stderr.write(`${JSON.stringify({ event: 'undeclared_answer', detail: message })}\n`);
  }
}

/**
 * Whether every answer is checked against its declaration at run time: on under the test
 * runner (vitest sets VITEST; its child processes inherit it), off in production, where the
 * types alone hold the handlers to their declarations.
 */
export const answerChecks = { enabled: process.env.VITEST === 'true' };

/** The Hono path of a declared path under `base`: `{param}` becomes `:param`. */
export function honoPath(path: string, base = ''): string {
  if (!path.startsWith(`${base}/`)) throw new Error(`route ${path} is not under ${base}`);
  return path.slice(base.length).replace(/\{([A-Za-z]+)\}/g, ':$1');
}

export function mount<E extends Env, K extends RouteKey>(app: Hono<E>, key: K, handler: Handler<K, E>, options: MountOptions = {}): void {
  const { method, path } = routeOf(key);
  // Widened to the general operation shape: the handler's types come from the key, the reading from the value.
  const operation = ROUTES[key] as {
    requestParams?: { path?: z.ZodType; query?: z.ZodType };
    requestBody?: { required?: boolean; content: { 'application/json': { schema: z.ZodType } } };
    responses: Record<string, { content?: Record<string, { schema: z.ZodType }> }>;
  };
  const names = [...path.matchAll(/\{([A-Za-z]+)\}/g)].map((match) => match[1]);
  const query = operation.requestParams?.query;
  const body = operation.requestBody;
  const declared = (status: number) => Object.hasOwn(operation.responses, String(status));

  const run = async (c: Context<E>) => {
    try {
      const inputs = {
        params: Object.fromEntries(names.map((name) => [name, pathId(c, name)])),
        query: query ? readQuery(c, query) : {},
        body: body
          ? await readJson(c, body.content['application/json'].schema, {
              optional: body.required !== true,
              ...(options.maxBytes ? { maxBytes: options.maxBytes } : {}),
            })
          : undefined,
      } as Inputs<K>;
      const answer = ((status: number, value: unknown) => {
        if (answerChecks.enabled) {
          const schema = operation.responses[String(status)]?.content?.['application/json']?.schema;
          if (!schema) throw new UndeclaredAnswerError(`${key} answered ${status}, which its declaration does not document as JSON`);
          const checked = schema.safeParse(value);
          if (!checked.success)
            throw new UndeclaredAnswerError(
              `${key} answered ${status} with a body its schema refuses: ${checked.error.issues.map((i) => `${i.path.map(String).join('.')}: ${i.message}`).join('; ')}`,
            );
        }
        return c.json(value as object, status as 200) as unknown as Answered;
      }) as Answer<K>;
      return await handler(c, inputs, answer);
    } catch (err) {
      if (answerChecks.enabled && err instanceof PipelineError && !declared(ERROR_CODES[err.code].status))
        throw new UndeclaredAnswerError(`${key} answered ${ERROR_CODES[err.code].status} ${err.code}, which its declaration does not document`, { cause: err });
      throw err;
    }
  };
  // Hono's `on` is typed per literal method and path; the declaration is the route's type here.
  const on = app.on.bind(app) as unknown as (method: string, path: string, ...handlers: MiddlewareHandler<E>[]) => unknown;
  on(
    method.toUpperCase(),
    `${options.prefix ?? ''}${honoPath(path, options.base)}`,
    ...((options.before ?? []) as MiddlewareHandler<E>[]),
    run as MiddlewareHandler<E>,
  );
}
