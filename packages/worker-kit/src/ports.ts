/** What the kit needs from its surroundings, as the smallest interfaces a `pg` pool and a pino logger satisfy. */

/** A `pg` Pool or Client (or anything with the same `query`): the kit's dedupe table lives there. */
export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<{ rows: T[] }>;
}

/** Where the kit logs its events, one JSON object per line (a pino logger fits). */
export interface KitLog {
  warn(entry: Record<string, unknown>): void;
}
