/**
 * Service configuration: every key of the spec plus the service's own, loaded from
 * defaults, then an optional JSON file (`PIPELINE_CONFIG`), then environment variables,
 * and validated with zod. A bad value stops start-up with a message naming the key.
 *
 * Environment names are the key upper-cased with `.` and `-` turned into `_`:
 * `pipeline.defaults.retry-limit` → `PIPELINE_DEFAULTS_RETRY_LIMIT`. A few well-known
 * names are also read: `DATABASE_URL`, `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `PORT`.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from '../errors';
import { parseAmqpUrl, parseSqsUrl } from '../dlq/urls';
import { temporalProfile } from '../temporal/profile';
import { parseDuration } from './duration';

const duration = (key: string) =>
  z.union([z.string(), z.number()]).transform((value, ctx) => {
    const ms = parseDuration(value);
    if (ms === undefined) {
      ctx.addIssue({ code: 'custom', message: `${key} must be a duration such as 30s, 1500ms or PT30S (got ${JSON.stringify(value)})` });
      return z.NEVER;
    }
    return ms;
  });

const DAY = 86_400_000;

const intFromString = z
  .union([z.number(), z.string().regex(/^-?\d+$/, 'must be a whole number')])
  .transform(Number)
  .pipe(z.number().int('must be a whole number'));
const boolFromString = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]);

export const DLQ_PROVIDERS = ['postgres', 'sqs', 'rabbitmq'] as const;

/** What one process runs: `all` (API + worker + periodic tasks), `api` (HTTP only), `worker` (worker + periodic tasks, health endpoints only). */
export const ROLES = ['all', 'api', 'worker'] as const;
export type Role = (typeof ROLES)[number];
export const WORKER_RUNS = ['all', 'live', 'bulk'] as const;

/**
 * What a token may do: `admin` the whole admin API (and submit); `repair` read the admin API
 * and re-drive or fork an execution, with a corrected input too, and nothing else of it;
 * `submit` the submit API only. Correcting an input needs admin or repair, never submit.
 */
export const TOKEN_ROLES = ['admin', 'repair', 'submit'] as const;
export type TokenRole = (typeof TOKEN_ROLES)[number];

export const TokenConfig = z.object({
  /** hex SHA-256 of the bearer token; the token itself is never configured */
  sha256: z.string().regex(/^[0-9a-f]{64}$/i, 'must be a hex SHA-256'),
  role: z.enum(TOKEN_ROLES),
  /**
   * this token may see payload values where a repair answers them (a corrected input's
   * before and after in a dry run, a fixture's inputs); default false: paths and fingerprints only
   */
  readPayloads: z.boolean().optional(),
  /** tenants this token may act on; absent = all tenants */
  tenants: z.array(z.string()).optional(),
  /** a name for audit logs (never the token) */
  name: z.string().optional(),
});
export type TokenConfig = z.infer<typeof TokenConfig>;

/** A payload encryption key (pipeline.codec.keys). */
export const CodecKey = z.object({
  /** printable id stored in each sealed payload's metadata (never the key) */
  id: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'id must be 1–64 of [A-Za-z0-9._-]'),
  /** 32 bytes, base64 */
  key: z.string().refine((value) => Buffer.from(value, 'base64').length === 32, 'key must be 32 bytes in base64 (openssl rand -base64 32)'),
});
export type CodecKey = z.infer<typeof CodecKey>;

/** The schema, with defaults. Keys are the spec's flat dotted names. */
export const ConfigSchema = z.object({
  /** Orchestration mode; only `QUEUE_ASYNC` (background execution) is implemented. */
  'pipeline.orchestrator.mode': z
    .literal('QUEUE_ASYNC', { message: 'pipeline.orchestrator.mode must be QUEUE_ASYNC (the only mode this service runs)' })
    .default('QUEUE_ASYNC'),
  /** Kind of queue used as the Execution DLQ: postgres (default), sqs, rabbitmq. */
  'pipeline.orchestrator.dlq-provider': z.string().default('postgres'),
  /** Address of the DLQ. postgres: omitted, or a postgres:// URL of the store database; sqs: the FIFO queue URL; rabbitmq: amqp://…?queue=name. */
  'pipeline.orchestrator.dlq-url': z.string().optional(),
  /** Deadline of a REST transition worker call. Default 30s. */
  'pipeline.orchestrator.worker.rest.request-timeout': duration('pipeline.orchestrator.worker.rest.request-timeout').default(30_000),
  /** Deadline of a gRPC transition worker call. Default 30s. */
  'pipeline.orchestrator.worker.grpc.request-timeout': duration('pipeline.orchestrator.worker.grpc.request-timeout').default(30_000),
  /**
   * How long the service keeps asking a REST/gRPC worker that answers "in progress" for the
   * same transition identity (it took the call, its outcome is not stored yet) before it
   * parks the execution as REMOTE_OUTCOME_UNKNOWN with that evidence. Those answers never
   * spend the step's retry attempts. Default 5m.
   */
  'pipeline.orchestrator.worker.in-progress-budget': duration('pipeline.orchestrator.worker.in-progress-budget').default(300_000),
  /** Start-to-close timeout of a LOCAL/FUNCTION step activity. Default 5m. */
  'pipeline.orchestrator.worker.step-timeout': duration('pipeline.orchestrator.worker.step-timeout').default(300_000),
  /**
   * The fast path (docs/decisions.md, "The fast path"): LOCAL and FUNCTION steps run as Temporal
   * local activities, several in one workflow task, their results recorded as markers. true: every
   * such step of every pipeline takes it unless its pipeline or step says `fastPath: false`. Default
   * false: only steps whose pipeline or step says `fastPath: true`. Remote steps never take it.
   */
  'pipeline.orchestrator.fast-path': boolFromString.default(false),
  /**
   * The longest deadline a fast-path step may have: a step without its own `timeoutMs` gets this one,
   * a step whose own is longer runs as a regular activity. A worker that dies mid-step is noticed by
   * Temporal only after the workflow task timeout (10 s), so longer steps gain nothing. Default 10s.
   */
  'pipeline.orchestrator.fast-path.max-step-timeout': duration('pipeline.orchestrator.fast-path.max-step-timeout').default(10_000),
  /** Heartbeat timeout of a step activity: how soon a dead worker's step is redelivered. Default 30s. */
  'pipeline.orchestrator.worker.heartbeat-timeout': duration('pipeline.orchestrator.worker.heartbeat-timeout').default(30_000),
  /**
   * Path of a prebuilt bundle of the workflows (`npm run bundle:workflows -- <path>`), built from
   * the same source as this service. Unset (default): the worker bundles them at start, about
   * a second of CPU. Ignored with tracing on, whose workflow interceptors are bundled in at start.
   */
  'pipeline.orchestrator.worker.workflow-bundle': z.string().min(1).optional(),
  /**
   * Runs a worker keeps in memory between their workflow tasks (Temporal's sticky cache). A run
   * waiting out a retry backoff or a long step stays cached: about 0.1–0.2 MB of the worker's RSS
   * each, the SDK's own per-run state (bare Temporal's parked runs measured as much or more:
   * BENCHMARKS.md, rows 5a–5d). Past this many, the least recently used run is evicted and replays
   * its history when it next wakes. Below 40 it also caps the workflow tasks a worker runs at once.
   * Unset (default): the SDK's own, from the heap size (about 600 per GiB of heap above 200 MiB;
   * about 2,300 with Node's 4 GiB default). 0 turns the cache off (every workflow task replays).
   */
  /**
   * Which runs this worker process executes: `all` (default: the pipelines' task queue and, when it
   * is another, `pipeline.redrive-job.run-task-queue`), `live` (the pipelines' task queue only) or
   * `bulk` (the bulk jobs' runs only). `live` and `bulk` need a run task queue of its own. Every
   * worker serves the jobs' own queue (their workflow and ticks) whatever this says.
   */
  'pipeline.orchestrator.worker.runs': z
    .enum(WORKER_RUNS, { message: `pipeline.orchestrator.worker.runs must be one of ${WORKER_RUNS.join(', ')}` })
    .default('all'),
  'pipeline.orchestrator.worker.max-cached-workflows': intFromString
    .pipe(
      z
        .number()
        .min(0, 'must be ≥ 0')
        .max(1_000_000)
        .refine((n) => n !== 1, 'must be 0 (no cache) or at least 2'),
    )
    .optional(),
  /** Retries after the first attempt. Default 5 (up to 6 attempts); 0 is valid. */
  'pipeline.defaults.retry-limit': intFromString.pipe(z.number().min(0, 'must be ≥ 0').max(1000)).default(5),
  /** Base delay before the first retry, ms. Default 1000. */
  'pipeline.defaults.retry-wait-ms': intFromString.pipe(z.number().min(0)).default(1000),
  /** Cap of the exponential backoff, ms. Default 30000. */
  'pipeline.defaults.max-backoff': intFromString.pipe(z.number().min(0)).default(30_000),
  /** Equal jitter on retry delays. Default true. */
  'pipeline.defaults.jitter': boolFromString.default(true),
  /** Fixed first path segment of the HTTP API. Default `pipeline`. */
  'pipeline.admin.prefix': z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, 'must be one path segment of [A-Za-z0-9_-]')
    .default('pipeline'),
  /**
   * Whether `/{prefix}/openapi.json` and the reference page `/{prefix}/docs` need a bearer
   * token (any role). Default false: they are documentation, not data; "Try it out" still
   * needs a token, given with the page's Authorize button.
   */
  'pipeline.admin.docs-require-token': boolFromString.default(false),
  /** Bearer tokens as a JSON array of { sha256, role, tenants?, name?, readPayloads? }. */
  'pipeline.auth.tokens': z
    .union([z.string(), z.array(z.unknown())])
    .transform((value, ctx) => {
      try {
        return z.array(TokenConfig).parse(typeof value === 'string' ? JSON.parse(value) : value);
      } catch (err) {
        ctx.addIssue({
          code: 'custom',
          message: `pipeline.auth.tokens must be a JSON array of { sha256, role, tenants? } (${err instanceof Error ? err.message.split('\n')[0] : 'invalid'})`,
        });
        return z.NEVER;
      }
    })
    .default([]),
  /** Payload encryption keys as a JSON array of { id, key (32 bytes base64) }; the first encrypts, all decrypt. Absent = payloads in clear. */
  'pipeline.codec.keys': z
    .union([z.string(), z.array(z.unknown())])
    .transform((value, ctx) => {
      try {
        const keys = z.array(CodecKey).parse(typeof value === 'string' ? JSON.parse(value) : value);
        if (new Set(keys.map((k) => k.id)).size !== keys.length) throw new Error('key ids must be unique');
        return keys;
      } catch (err) {
        const detail =
          err instanceof z.ZodError ? err.issues.map((issue) => issue.message).join('; ') : err instanceof Error ? err.message.split('\n')[0] : 'invalid';
        ctx.addIssue({ code: 'custom', message: `pipeline.codec.keys must be a JSON array of { "id", "key": 32 bytes base64 } (${detail})` });
        return z.NEVER;
      }
    })
    .default([]),
  /** Origins allowed to call the codec endpoint from a browser (the Temporal UI), comma-separated. */
  'pipeline.codec.cors-origins': z
    .string()
    .default('')
    .transform((value) =>
      value
        .split(',')
        .map((origin) => origin.trim())
        .filter(Boolean),
    ),
  /** OTLP/HTTP traces endpoint, e.g. http://collector:4318/v1/traces. Absent = tracing off. */
  'pipeline.tracing.otlp-endpoint': z.string().url('must be a URL such as http://collector:4318/v1/traces').optional(),
  /** What this process runs: all (default), api, worker. */
  'pipeline.role': z.enum(ROLES, { message: `pipeline.role must be one of ${ROLES.join(', ')}` }).default('all'),
  /** How long a stopping process lets in-flight HTTP requests and running activities finish. Default 30s. */
  'pipeline.shutdown.grace-period': duration('pipeline.shutdown.grace-period').default(30_000),
  /** HTTP port of the API. Default 8080; 0 = any free port, reported at start-up. */
  'pipeline.server.port': intFromString.pipe(z.number().min(0).max(65535)).default(8080),
  /** Interface the HTTP API listens on. Default 127.0.0.1 (this machine only); docker-compose sets 0.0.0.0. */
  'pipeline.server.host': z
    .string()
    .regex(/^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|[0-9A-Fa-f:.]{2,45})$/, 'must be a host name or an IP address, e.g. 127.0.0.1 or 0.0.0.0')
    .default('127.0.0.1'),
  /** How long a request body may take to arrive in full; past it the answer is 408. Default 10s. */
  'pipeline.server.body-read-timeout': duration('pipeline.server.body-read-timeout').pipe(z.number().min(1, 'must be positive')).default(10_000),
  /** How long a client may take to send a request's headers; past it Node answers 408 and closes the connection. Default 10s. */
  'pipeline.server.headers-timeout': duration('pipeline.server.headers-timeout').pipe(z.number().min(1, 'must be positive')).default(10_000),
  /** How long a client may take to send a whole request (headers and body); past it Node answers 408 and closes the connection. Default 30s. */
  'pipeline.server.request-timeout': duration('pipeline.server.request-timeout').pipe(z.number().min(1, 'must be positive')).default(30_000),
  /** hex SHA-256 of a bearer token that GET /metrics then requires; absent = /metrics is open (bind it to a private interface). */
  'pipeline.metrics.token-sha256': z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'must be a hex SHA-256 (printf %s "$TOKEN" | sha256sum)')
    .optional(),
  /** Postgres URL of the store. Absent = embedded PGlite under the data dir. TLS through the URL's `sslmode`. */
  'pipeline.store.url': z.string().optional(),
  /** PEM file of the CA that signed the Postgres server's certificate (verification on). */
  'pipeline.store.ca-file': z.string().optional(),
  /** Connections the store's pool holds at most (step commits, the API, sweepers); Postgres only. Default 10. */
  'pipeline.store.pool-size': intFromString.pipe(z.number().min(1, 'must be at least 1').max(1000)).default(10),
  /** How long a query waits for a pool connection (or a new connection to open) before the answer is 503 STORE_UNAVAILABLE. Default 5s. */
  'pipeline.store.acquire-timeout': duration('pipeline.store.acquire-timeout').pipe(z.number().min(1, 'must be positive')).default(5000),
  /** How long a pool connection may sit idle before it is closed (the store's pool and the jobs' pool). Postgres only. Default 10s. */
  'pipeline.store.idle-timeout': duration('pipeline.store.idle-timeout').pipe(z.number().min(1, 'must be positive')).default(10_000),
  /** The run's statements (admission, begin, step commits, the record read) and the re-drive admission as named prepared statements (parsed once per connection). Off for a pooler that cannot keep them (PgBouncer before 1.21 in transaction mode). Default true. */
  'pipeline.store.prepared-statements': boolFromString.default(true),
  /** Connections of bulk re-drive jobs' own pool (their admissions never take the live traffic's); a tick admits twice as many items at once. Postgres only. Default 8. */
  'pipeline.redrive-job.pool-size': intFromString.pipe(z.number().min(1, 'must be at least 1').max(100)).default(8),
  /**
   * Temporal task priority (1 highest … 5 lowest) of the runs a bulk re-drive job admits; live
   * executions and single re-drives keep Temporal's default, 3. On the pipeline task queue, Temporal
   * hands workers live tasks ahead of a job's backlog (within each partition). Default 4; 3 turns it off.
   */
  'pipeline.redrive-job.priority': intFromString.pipe(z.number().int().min(1, 'must be 1 to 5').max(5, 'must be 1 to 5')).default(4),
  /**
   * A bulk re-drive job yields to live traffic: it starts at a fifth of its asked rate, backs off
   * while its own admissions (the same statement and Temporal start as a live submission) take
   * more than twice the quietest it has seen, and speeds up again while they take at most 1.5×,
   * never past the asked rate (the ceiling). The job's view says when it is held back by this.
   * Live traffic first: on two cores, a 1,000-item job asked 50/s then ran at about 1.5/s
   * (BENCHMARKS.md). Default false: a job admits at its asked rate whatever the machine's load.
   */
  'pipeline.redrive-job.yield-to-live': boolFromString.default(false),
  /** Task queue of bulk re-drive jobs' workflow and activities; every worker serves it. Default: pipeline.temporal.task-queue + `-redrive-jobs`. */
  'pipeline.redrive-job.task-queue': z.string().min(1).optional(),
  /**
   * Task queue the runs a bulk re-drive job admits start on. Default: the pipelines' own
   * (`pipeline.temporal.task-queue`). Set it, the same in every process, to give a fleet-sized
   * job's runs workers of their own (`pipeline.orchestrator.worker.runs`): live runs then never
   * wait for a slot, a core or a cached run behind them.
   */
  'pipeline.redrive-job.run-task-queue': z.string().min(1).optional(),
  /** Temporal frontend address. Absent = TEMPORAL_ADDRESS or the temporal CLI's profile, else the embedded dev server. */
  'pipeline.temporal.address': z.string().optional(),
  /** Temporal namespace. Default: TEMPORAL_NAMESPACE or the profile's, else `default`. */
  'pipeline.temporal.namespace': z.string().default('default'),
  'pipeline.temporal.task-queue': z.string().default('pipeline'),
  /** Deadline of every Temporal call made while answering a request (start, describe) and of /readyz's checks. Default 5s. */
  'pipeline.temporal.call-timeout': duration('pipeline.temporal.call-timeout').pipe(z.number().min(1, 'must be positive')).default(5000),
  /**
   * How long start-up keeps trying to reach a configured Temporal (capped exponential backoff)
   * before it gives up and exits; /readyz answers 503 meanwhile. Default 10m: a first
   * docker-compose start waits for Temporal's schema set-up. 0 = one try.
   */
  'pipeline.temporal.connect-wait': duration('pipeline.temporal.connect-wait').pipe(z.number().min(0)).default(600_000),
  /** Frontend port of the embedded Temporal dev server. Default 7233; 0 = a free port outside the ephemeral range, reported at start-up. */
  'pipeline.temporal.dev-server.port': intFromString.pipe(z.number().min(0).max(65535)).default(7233),
  /** Web UI port of the embedded Temporal dev server. Default 8233; 0 = a free port outside the ephemeral range, reported at start-up. */
  'pipeline.temporal.dev-server.ui-port': intFromString.pipe(z.number().min(0).max(65535)).default(8233),
  /**
   * Path of a module exporting the pipelines this service registers (default export or
   * `pipelines`: a pipeline, a list of them, or a function returning either), resolved
   * against the working directory. Set, it replaces the built-in demo pipeline and its demo
   * workers. Absent (default): the demo.
   */
  'pipeline.pipelines-module': z.string().min(1, 'must be a path to a module').optional(),
  /** Port of the demo pipeline's REST transition worker (the kit, in-process, on 127.0.0.1). Default 8091; 0 = any free port, reported at start-up. */
  'pipeline.demo.rest-port': intFromString.pipe(z.number().min(0).max(65535)).default(8091),
  /** Port of the demo pipeline's gRPC transition worker. Default 8092; 0 = any free port, reported at start-up. */
  'pipeline.demo.grpc-port': intFromString.pipe(z.number().min(0).max(65535)).default(8092),
  /** Where the embedded default keeps its state. Default `.data`. */
  'pipeline.data-dir': z.string().default('.data'),
  /** Checkpoint admissions in flight at once. Default 8. */
  'pipeline.checkpoint.concurrency': intFromString.pipe(z.number().min(1).max(256)).default(8),
  /** An admission slower than this logs checkpoint_publication_delivery_failure (SLOW_ADMISSION). Default 5s. */
  'pipeline.checkpoint.slow-admission': duration('pipeline.checkpoint.slow-admission').default(5000),
  /** How often the publisher looks for due checkpoints. Default 1s. */
  'pipeline.checkpoint.interval': duration('pipeline.checkpoint.interval').default(1000),
  /** How often the due-execution sweeper looks for undispatched runs. Default 5s. */
  'pipeline.sweeper.interval': duration('pipeline.sweeper.interval').default(5000),
  /** Records of SUCCEEDED executions (with their Command effects and attempt log) are deleted this long after they succeeded. Default 7d. */
  'pipeline.retention.succeeded-executions': duration('pipeline.retention.succeeded-executions').default(7 * DAY),
  /** DLQ envelopes whose execution was re-driven since are deleted this long after the re-drive; an envelope of an execution still FAILED is kept. Default 30d. */
  'pipeline.retention.dlq': duration('pipeline.retention.dlq').default(30 * DAY),
  /** Re-drive audit rows are deleted this long after the re-drive, never while an envelope they explain is kept. At least pipeline.retention.dlq. Default 365d. */
  'pipeline.retention.redrive-audit': duration('pipeline.retention.redrive-audit').default(365 * DAY),
  /** Item reject envelopes are deleted this long after they were written. Default 14d. */
  'pipeline.retention.rejects': duration('pipeline.retention.rejects').default(14 * DAY),
  /** Checkpoints admitted this long ago are deleted; a handoff key republished after that is admitted again. Default 7d. */
  'pipeline.retention.checkpoints': duration('pipeline.retention.checkpoints').default(7 * DAY),
  /** Dispatch rows whose run started this long ago are deleted. Default 1d. */
  'pipeline.retention.dispatch': duration('pipeline.retention.dispatch').default(DAY),
  /** The worker kit's dedupe rows in the store database (the demo workers') are deleted this long after completion; at least the longest a redelivery can arrive. Default 30d. */
  'pipeline.retention.dedupe': duration('pipeline.retention.dedupe').default(30 * DAY),
  /** How often the retention pass runs. Default 1m. */
  'pipeline.retention.interval': duration('pipeline.retention.interval').default(60_000),
  /** Rows deleted per statement (and per lock held). Default 1000. */
  'pipeline.retention.batch-size': intFromString.pipe(z.number().min(1).max(100_000)).default(1000),
  /**
   * The share of each retention interval a pass may spend while rows past retention remain: it
   * goes on in batches until none is left or this much of the interval is used, and the next
   * pass starts one interval after this one started. A number in (0, 1]. Default 0.5.
   */
  'pipeline.retention.duty-cycle': z
    .union([
      z.number(),
      z
        .string()
        .regex(/^\d*\.?\d+$/, 'must be a number')
        .transform(Number),
    ])
    .pipe(z.number().gt(0, 'must be more than 0').max(1, 'must be at most 1'))
    .default(0.5),
});
export type Config = z.output<typeof ConfigSchema>;
export type ConfigInput = Partial<z.input<typeof ConfigSchema>>;

const ALIASES: Record<string, keyof Config> = {
  DATABASE_URL: 'pipeline.store.url',
  TEMPORAL_ADDRESS: 'pipeline.temporal.address',
  TEMPORAL_NAMESPACE: 'pipeline.temporal.namespace',
  PORT: 'pipeline.server.port',
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'pipeline.tracing.otlp-endpoint',
};

export function envName(key: string): string {
  return key.toUpperCase().replace(/[.-]/g, '_');
}

/** Reads the raw key/value pairs from a file and the environment, without validating. */
function collectRaw(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const raw: Record<string, unknown> = {};
  const file = env.PIPELINE_CONFIG;
  if (file) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(file, 'utf8'));
    } catch (err) {
      throw new ConfigError(`PIPELINE_CONFIG (${file}) is not a readable JSON file: ${err instanceof Error ? err.message : err}`);
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new ConfigError(`PIPELINE_CONFIG (${file}) must hold a JSON object of "pipeline.*" keys`);
    }
    Object.assign(raw, parsed);
  }
  for (const [alias, key] of Object.entries(ALIASES)) {
    if (env[alias] !== undefined && env[alias] !== '') raw[key] = env[alias];
  }
  for (const key of Object.keys(ConfigSchema.shape)) {
    const value = env[envName(key)];
    if (value !== undefined && value !== '') raw[key] = value;
  }
  // The temporal CLI's profile (TOML file and TEMPORAL_* variables) fills what is not set here.
  const profile = temporalProfile(env);
  if (profile.address) raw['pipeline.temporal.address'] ??= profile.address;
  if (profile.namespace) raw['pipeline.temporal.namespace'] ??= profile.namespace;
  return raw;
}

/**
 * Validates configuration. `overrides` win over the file and the environment (tests use it).
 * Throws ConfigError naming every bad key and the expected shape.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: ConfigInput = {}): Config {
  const raw = { ...collectRaw(env), ...overrides };
  const unknownKeys = Object.keys(raw).filter((key) => !(key in ConfigSchema.shape));
  if (unknownKeys.length > 0) {
    throw new ConfigError(`unknown configuration key(s): ${unknownKeys.join(', ')}`);
  }
  const result = ConfigSchema.safeParse(raw);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => {
      const key = String(issue.path[0] ?? '(config)');
      return issue.message.startsWith(key) ? issue.message : `${key}: ${issue.message}`;
    });
    throw new ConfigError(`invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  return checkRunQueues(checkServer(checkRetention(checkDlq(result.data))));
}

/** The task queue a bulk job's runs start on: its own when configured, else the pipelines'. */
export function bulkRunTaskQueue(config: Config): string {
  return config['pipeline.redrive-job.run-task-queue'] ?? config['pipeline.temporal.task-queue'];
}

function checkRunQueues(config: Config): Config {
  const runs = config['pipeline.orchestrator.worker.runs'];
  if (runs !== 'all' && bulkRunTaskQueue(config) === config['pipeline.temporal.task-queue']) {
    throw new ConfigError(
      `pipeline.orchestrator.worker.runs=${runs} needs pipeline.redrive-job.run-task-queue set to a task queue other than pipeline.temporal.task-queue (${config['pipeline.temporal.task-queue']}): with one queue, live and bulk runs cannot be told apart`,
    );
  }
  return config;
}

function checkServer(config: Config): Config {
  if (config['pipeline.server.headers-timeout'] > config['pipeline.server.request-timeout']) {
    throw new ConfigError('pipeline.server.headers-timeout must be at most pipeline.server.request-timeout: the headers are part of the request');
  }
  return config;
}

/**
 * The longest a redelivery of one transition identity can still arrive after its first
 * delivery, under the configured defaults: every Temporal attempt of the step's activity
 * (the retry budget plus 10 redeliveries) at its full deadline (plus Temporal's 10 s
 * margin, and for a remote step the in-progress budget it may spend asking again) and the
 * longest backoff between them. Per-step overrides are not seen here.
 */
export function redeliveryHorizonMs(config: Config): number {
  const deadline = Math.max(
    config['pipeline.orchestrator.worker.step-timeout'],
    config['pipeline.orchestrator.worker.rest.request-timeout'],
    config['pipeline.orchestrator.worker.grpc.request-timeout'],
  );
  const attemptMs = deadline + 10_000 + config['pipeline.orchestrator.worker.in-progress-budget'] + config['pipeline.defaults.max-backoff'];
  return (config['pipeline.defaults.retry-limit'] + 11) * attemptMs;
}

function checkRetention(config: Config): Config {
  if (config['pipeline.retention.redrive-audit'] < config['pipeline.retention.dlq']) {
    throw new ConfigError('pipeline.retention.redrive-audit must be at least pipeline.retention.dlq: the re-drive audit outlives the envelopes it explains');
  }
  const horizon = redeliveryHorizonMs(config);
  if (config['pipeline.retention.dedupe'] < horizon) {
    throw new ConfigError(
      `pipeline.retention.dedupe must be at least ${Math.ceil(horizon / 1000)} s: a redelivery of a transition can still arrive that long after its first delivery (retry-limit, step and request timeouts, max-backoff)`,
    );
  }
  return config;
}

function checkDlq(config: Config): Config {
  const provider = config['pipeline.orchestrator.dlq-provider'];
  if (!(DLQ_PROVIDERS as readonly string[]).includes(provider)) {
    throw new ConfigError(`pipeline.orchestrator.dlq-provider: unknown provider "${provider}"; expected one of ${DLQ_PROVIDERS.join(', ')}`);
  }
  const url = config['pipeline.orchestrator.dlq-url'];
  if (provider === 'sqs' || provider === 'rabbitmq') {
    if (!url) throw new ConfigError(`pipeline.orchestrator.dlq-url is required for provider ${provider}`);
    if (provider === 'sqs') parseSqsUrl(url);
    else parseAmqpUrl(url);
    return config;
  }
  if (url !== undefined) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new ConfigError(
        `pipeline.orchestrator.dlq-url: "${url}" is not a URL; the postgres provider expects postgres://host/database (or leave it unset to use the store database)`,
      );
    }
    if (!['postgres:', 'postgresql:'].includes(parsed.protocol)) {
      throw new ConfigError(`pipeline.orchestrator.dlq-url: provider "postgres" needs a postgres:// URL, got ${parsed.protocol}//…`);
    }
    const store = config['pipeline.store.url'];
    if (store && sameDatabase(store, parsed) === false) {
      throw new ConfigError(
        'pipeline.orchestrator.dlq-url: the postgres DLQ must live in the store database (the envelope commits in the same transaction as the FAILED record)',
      );
    }
  }
  return config;
}

function sameDatabase(storeUrl: string, dlq: URL): boolean | undefined {
  try {
    const store = new URL(storeUrl);
    return store.hostname === dlq.hostname && (store.port || '5432') === (dlq.port || '5432') && store.pathname === dlq.pathname;
  } catch {
    return undefined;
  }
}
