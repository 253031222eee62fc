/**
 * The database seam. The store talks to `Db`, which a `pg` pool (a real Postgres
 * server) or PGlite (the embedded default, Postgres compiled to WASM, kept under the
 * data dir) both satisfy. Every call is one round trip; `stats.queries` counts them so
 * benchmarks can report round trips per step.
 */
import { createHash } from 'node:crypto';
import { accessSync, constants } from 'node:fs';
import pg from 'pg';
import { causeChain, ConfigError, StoreUnavailableError } from '../errors';
import type { Log } from '../log';
import { retryDelayMs, type Backoff } from '../retry';

/**
 * A statement's answer. The store's code never names `T` (a lint holds it to that, with no `as`
 * on a row: test/lint/store-rows.test.ts): its rows are records of unknown values until their
 * table's mapper reads them (columns.ts `readRow`). Tests and benchmarks that peek at a table
 * may name the row they expect.
 */
export interface QueryResult<T = Record<string, unknown>> {
  rows: T[];
  rowCount: number;
}

export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<QueryResult<T>>;
}

/**
 * A Queryable for a database that is opened later: queries wait until `open(db)` is called.
 * For listeners that must bind (and report their port) before the database they use exists.
 */
export function deferredQueryable(): { db: Queryable; open(db: Queryable): void } {
  let open: (db: Queryable) => void = () => undefined;
  const opened = new Promise<Queryable>((resolve) => (open = resolve));
  return { db: { query: async (sql, params) => (await opened).query(sql, params) }, open };
}

/** A transaction's handle: queries, and whole SQL scripts run inside the same transaction. */
export interface Transaction extends Queryable {
  /** Runs a multi-statement SQL script as one simple-protocol round trip (a migration file). */
  exec(sql: string): Promise<void>;
}

export interface Db extends Queryable {
  /** Runs `fn` in one transaction; commits on return, rolls back on throw. */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
  /** Runs a multi-statement SQL script (migrations). */
  exec(sql: string): Promise<void>;
  /**
   * Runs a statement the store sends again and again (an admission, a run's begin, a step
   * commit, the record read, a re-drive admission) as a named prepared statement: Postgres
   * parses and plans it once per connection instead of on every call. Its result columns must
   * be named (no `*`), so a column a migration adds never changes a prepared statement's
   * result. PGlite, and a pool with prepared statements off (`pipeline.store.prepared-statements
   * =false`, for a pooler that cannot keep them), run it as `query`.
   */
  prepared<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<QueryResult<T>>;
  close(): Promise<void>;
  readonly kind: 'postgres' | 'pglite';
  /** PGlite's data dir (`memory://…` when not on disk) */
  readonly dataDir?: string;
  readonly stats: { queries: number };
}

/** One round trip that proves the database answers (readiness). */
export async function ping(db: Queryable): Promise<void> {
  await db.query('SELECT 1');
}

// int8 and numeric arrive as strings from pg; counts and epochs here fit in a double.
pg.types.setTypeParser(20, (value) => Number(value));

/**
 * SQLSTATEs and socket errors that say "try again": serialisation failure, deadlock,
 * the server shutting down / crashed / still starting (57P03), connection exceptions (08…).
 */
const TRANSIENT_CODES = new Set([
  '40001',
  '40P01',
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
]);
/** pg reports a dropped connection with a message and no code. */
const TRANSIENT_MESSAGE = /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error/i;

/**
 * Serialisation failures and lost connections are safe to retry; nothing else is. Looks
 * through the cause chain (and an AggregateError's errors, as Node reports a refused
 * connection to every address of a host), so a wrapped connection loss is still one.
 */
export function isTransient(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 8) return false;
  if (err instanceof StoreUnavailableError) return true;
  const { code, message, cause } = err as { code?: unknown; message?: unknown; cause?: unknown };
  if (typeof code === 'string' && TRANSIENT_CODES.has(code)) return true;
  if (typeof message === 'string' && TRANSIENT_MESSAGE.test(message)) return true;
  if (err instanceof AggregateError && err.errors.some((inner) => isTransient(inner, depth + 1))) return true;
  return isTransient(cause, depth + 1);
}

/** 50 ms, 100 ms, 200 ms … capped at 1 s, equal jitter. */
const TRANSIENT_BACKOFF: Backoff = { waitMs: 50, maxBackoffMs: 1000, jitter: true };

/** The pool stayed full for its whole acquire timeout: answered at once, not retried. */
class PoolExhaustedError extends StoreUnavailableError {}

async function withRetry<T>(fn: () => Promise<T>, attempts = 4): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof PoolExhaustedError || !isTransient(err)) throw err;
      // Still down after a few tries: say so (503 with Retry-After on the API), never a 500.
      if (attempt >= attempts) throw err instanceof StoreUnavailableError ? err : new StoreUnavailableError(err);
      await new Promise((resolve) => setTimeout(resolve, retryDelayMs(TRANSIENT_BACKOFF, attempt)));
    }
  }
}

/**
 * The store's connection string with Postgres TLS: `sslmode` stays the URL's own
 * (`require`, `verify-ca`, `verify-full`); `caFile` (pipeline.store.ca-file) adds the CA
 * that signed the server's certificate and turns verification on (`verify-full` unless the
 * URL asks for another verifying mode). An unreadable file or `sslmode=disable` beside a CA
 * file is a ConfigError naming the key.
 */
export function storeConnectionString(url: string, caFile?: string): string {
  if (!caFile) return url;
  try {
    accessSync(caFile, constants.R_OK);
  } catch (err) {
    throw new ConfigError(`pipeline.store.ca-file: cannot read ${caFile}: ${(err as NodeJS.ErrnoException).code ?? err}`);
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError('pipeline.store.url: not a postgres:// URL');
  }
  const mode = parsed.searchParams.get('sslmode');
  if (mode === 'disable' || mode === 'allow' || mode === 'prefer') {
    throw new ConfigError(`pipeline.store.ca-file is set but pipeline.store.url has sslmode=${mode}: use verify-full (or verify-ca) to verify the server`);
  }
  if (!mode || mode === 'require') parsed.searchParams.set('sslmode', 'verify-full');
  parsed.searchParams.set('sslrootcert', caFile);
  return parsed.toString();
}

/**
 * A failure to reach Postgres at start-up that a TLS setting explains becomes a ConfigError
 * naming the key: the CA file (the server's certificate does not verify) or the URL's
 * sslmode (the server has no TLS, or refuses a plain connection).
 */
export function explainStoreFailure(err: unknown, url: string, caFile?: string): unknown {
  // The store may wrap the driver's error (StoreUnavailableError): read the cause chain.
  const chain = causeChain(err);
  const codes = chain.map((at) => String(at.code ?? ''));
  const message = chain.map((at) => at.message).join(': ');
  const code = codes.find((c) => /CERT|SELF_SIGNED|UNABLE_TO|ALTNAME|HOSTNAME/.test(c)) ?? '';
  if (/CERT|SELF_SIGNED|UNABLE_TO|ALTNAME|HOSTNAME/.test(code) || /certificate|self.signed/i.test(message)) {
    const key = caFile ? 'pipeline.store.ca-file' : 'pipeline.store.ca-file (unset: the system CAs were used)';
    return new ConfigError(
      `${key}: the Postgres server's certificate does not verify (${code || message.slice(0, 200)}); set the CA that signed it, or check the host name in pipeline.store.url`,
      { cause: err },
    );
  }
  if (/does not support SSL|no pg_hba.conf entry .*no encryption|SSL off/i.test(message)) {
    let mode = '';
    try {
      mode = new URL(url).searchParams.get('sslmode') ?? '';
    } catch {
      // not a URL: the message says enough
    }
    return new ConfigError(`pipeline.store.url: ${mode ? `sslmode=${mode}` : 'the TLS setting'} does not match the server (${message.slice(0, 200)})`, {
      cause: err,
    });
  }
  return err;
}

/** Distinct statements a pool prepares at most (the store's hot statements are a handful; past it, statements run unprepared). */
const MAX_PREPARED = 64;

/**
 * A `pg` pool of at most `max` connections (pipeline.store.pool-size); a query waits at most
 * `acquireTimeoutMs` (pipeline.store.acquire-timeout) for one. A pool that stays full past it
 * is not retried: the answer is StoreUnavailableError (503) at once, never a hang. A connection
 * left idle for `idleTimeoutMs` (pipeline.store.idle-timeout) is closed, so a burst's connections
 * go back to the server's `max_connections` budget.
 */
export function createPgDb(
  connectionString: string,
  options: { max?: number; acquireTimeoutMs?: number; idleTimeoutMs?: number; preparedStatements?: boolean; log?: Log } = {},
): Db {
  const max = options.max ?? 10;
  const pool = new pg.Pool({
    connectionString,
    max,
    connectionTimeoutMillis: options.acquireTimeoutMs ?? 5000,
    idleTimeoutMillis: options.idleTimeoutMs ?? 10_000,
    // Names the service's connections in pg_stat_activity; the URL's application_name or PGAPPNAME takes precedence.
    application_name: process.env.PGAPPNAME ?? 'pipeline-orchestrator',
  });
  /** Every connection busy and the wait ran out: retrying would only queue again behind the same work. */
  const exhausted = (err: unknown) => {
    if (err instanceof Error && /timeout exceeded when trying to connect/.test(err.message) && pool.totalCount >= max) {
      options.log?.warn({ event: 'store_pool_exhausted', poolSize: max, waiting: pool.waitingCount });
      return new PoolExhaustedError(err);
    }
    return err;
  };
  // An idle client losing its connection must not crash the process (the pool replaces it), but it is news.
  pool.on('error', (err: Error & { code?: string }) => {
    options.log?.warn({ event: 'store_connection_lost', error: err.name, code: err.code ?? null, message: err.message.slice(0, 200) });
  });
  const stats = { queries: 0 };
  // A prepared statement's name is its text's hash: one text, one name, on every connection.
  const names = new Map<string, string>();
  const nameOf = (sql: string): string | undefined => {
    let name = names.get(sql);
    if (name === undefined && names.size < MAX_PREPARED) {
      name = `pipeline_${createHash('sha256').update(sql).digest('hex').slice(0, 24)}`;
      names.set(sql, name);
    }
    return name;
  };
  // pg's rows are untyped (`any`): what they hold is for the caller's mapper to check.
  const send = async <T>(query: string | pg.QueryConfig, params?: unknown[]): Promise<QueryResult<T>> => {
    stats.queries++;
    const result = await withRetry(() =>
      (typeof query === 'string' ? pool.query(query, params) : pool.query(query)).catch((err: unknown) => Promise.reject(exhausted(err))),
    );
    return { rows: result.rows, rowCount: result.rowCount ?? 0 };
  };
  return {
    kind: 'postgres',
    stats,
    query: (sql, params) => send(sql, params),
    prepared(sql, params) {
      const name = options.preparedStatements === false ? undefined : nameOf(sql);
      return name === undefined ? send(sql, params) : send({ name, text: sql, values: params });
    },
    async transaction<T>(fn: (tx: Transaction) => Promise<T>) {
      return withRetry(async () => {
        const client = await pool.connect().catch((err: unknown) => Promise.reject(exhausted(err)));
        const tx: Transaction = {
          async query<R>(sql: string, params?: unknown[]): Promise<QueryResult<R>> {
            stats.queries++;
            const result = await client.query(sql, params);
            return { rows: result.rows, rowCount: result.rowCount ?? 0 };
          },
          // No parameters: pg sends the simple-query protocol, which runs every statement of the text.
          async exec(sql: string) {
            stats.queries++;
            await client.query(sql);
          },
        };
        try {
          await tx.query('BEGIN');
          const value = await fn(tx);
          await tx.query('COMMIT');
          return value;
        } catch (err) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw err;
        } finally {
          client.release();
        }
      });
    },
    async exec(sql: string) {
      stats.queries++;
      await pool.query(sql);
    },
    close: () => pool.end(),
  };
}

export async function createPgliteDb(dataDir: string): Promise<Db> {
  const { PGlite } = await import('@electric-sql/pglite');
  const lite = await PGlite.create(dataDir);
  const stats = { queries: 0 };
  const wrap = (target: {
    query: <T>(sql: string, params?: unknown[]) => Promise<{ rows: T[]; affectedRows?: number }>;
    exec: (sql: string) => Promise<unknown>;
  }): Transaction => ({
    async query<T>(sql: string, params?: unknown[]) {
      stats.queries++;
      const result = await target.query<T>(sql, params);
      // PGlite counts only DML in affectedRows (0 for a SELECT); returned rows are what callers count.
      return { rows: result.rows, rowCount: result.rows.length > 0 ? result.rows.length : (result.affectedRows ?? 0) };
    },
    async exec(sql: string) {
      stats.queries++;
      await target.exec(sql);
    },
  });
  const top = wrap(lite);
  return {
    kind: 'pglite',
    dataDir,
    stats,
    ...top,
    prepared: top.query,
    transaction: (fn) => lite.transaction((tx) => fn(wrap(tx))),
    close: () => lite.close(),
  };
}
