/**
 * The store's one way from a driver's row to a typed one. A query answers `unknown` rows
 * (db.ts); each table's columns are a zod object (rows.ts and the stores beside their row
 * interfaces), JSON columns parsed with the contract's schemas; `readRow` checks a row
 * against them and a row that does not match is a StoredValueError naming the table, the
 * row and the first column that does not, never a silent cast.
 */
import { z } from 'zod';
import { StoredValueError } from '../errors';

/** A text column. */
export const text = z.string();
/**
 * A number column: int4 arrives as a number, int8 as a number (db.ts's parser) or a bigint or
 * string (PGlite), numeric and `sum()` as a string.
 */
export const num = z.union([
  z.number(),
  z.bigint().transform(Number),
  z
    .string()
    .regex(/^-?\d+(\.\d+)?(e[+-]?\d+)?$/i)
    .transform(Number),
]);
/** A timestamp column: a Date from both drivers, an ISO string inside json_agg. */
export const time = z.union([z.date(), z.string()]).transform((value, ctx) => {
  const at = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(at.getTime())) {
    ctx.addIssue({ code: 'custom', message: `not a timestamp: ${String(value).slice(0, 40)}` });
    return z.NEVER;
  }
  return at;
});
export const bool = z.boolean();
/** A jsonb column holding any JSON value (a step's input or output): kept as it is. */
export const anyJson = z.unknown();
/** `{ code: n }` counts in a jsonb column. */
export const countsByCode = z.record(z.string(), z.number());

/** Columns that name a row for an operator, in this order (`acme/order-2`). */
const KEY_COLUMNS = ['tenant_id', 'execution_id', 'job_id', 'handoff_key', 'dispatch_id', 'redrive_id', 'group_id', 'id'];
/** A row with none of those (pipeline_definition) is named by these. */
const OTHER_KEY_COLUMNS = ['pipeline', 'version'];

function rowName(value: unknown, keyColumns: readonly string[] | string): string {
  if (typeof keyColumns === 'string') return keyColumns;
  if (!value || typeof value !== 'object') return '(not a row)';
  const named = (columns: readonly string[]) =>
    columns.flatMap((column) => {
      const at: unknown = Reflect.get(value, column);
      return typeof at === 'string' || typeof at === 'number' ? [String(at)] : [];
    });
  const key = named(keyColumns).length ? named(keyColumns) : named(OTHER_KEY_COLUMNS);
  return key.length ? key.join('/') : '(row)';
}

/**
 * The row checked against `columns` of `table`; a mismatch is a StoredValueError naming the
 * table, the row (by `key`'s columns, default its tenant and id columns, or `key` itself) and the column.
 */
export function readRow<S extends z.ZodType>(table: string, columns: S, row: unknown, key: readonly string[] | string = KEY_COLUMNS): z.output<S> {
  const parsed = columns.safeParse(row);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const [column, ...inside] = issue.path;
  const where = column === undefined ? '(row)' : String(column);
  throw new StoredValueError(table, rowName(row, key), where, `${inside.join('.') || '(column)'}: ${issue.message}`);
}

/** Every row of a result through `readRow`. */
export function readRows<S extends z.ZodType>(table: string, columns: S, rows: readonly unknown[], key?: readonly string[]): z.output<S>[] {
  return rows.map((row) => readRow(table, columns, row, key));
}
