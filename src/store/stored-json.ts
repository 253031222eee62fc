/**
 * Long-lived JSON columns read back through the contract's schemas: a job request, its halt
 * rules and control log, a DLQ envelope, a parked execution's remote call. Rows live for
 * hours or years; a value written before a schema changed (or by hand) that no longer
 * parses is a StoredValueError naming the table, the row and the field, never a silent cast.
 */
import type { z } from 'zod';
import { StoredValueError } from '../errors';

/** Where a stored value lives: `row` names it for an operator (e.g. `acme/order-2`). */
export interface StoredAt {
  table: string;
  row: string;
  field: string;
}

export function parseStored<S extends z.ZodType>(schema: S, value: unknown, at: StoredAt): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new StoredValueError(at.table, at.row, at.field, `${issue.path.join('.') || '(root)'}: ${issue.message}`);
}
