/**
 * A statement's parameters by name. `named(values, (p) => sql)` hands the builder one
 * placeholder per key of `values` (`p.tenantId` is `$1`, in the keys' order) and answers the
 * text with the values in that order, so a long statement reads `${p.jobId}` instead of `$16`
 * and a parameter cannot be sent in the wrong position. A key the text never uses is a
 * programming error (Postgres could not type it): thrown here, naming the key.
 */
export interface NamedStatement {
  text: string;
  params: unknown[];
}

/** The placeholders of `values`' keys, as the builder sees them. */
export type Placeholders<V> = { readonly [K in keyof V]: string };

export function named<V extends Record<string, unknown>>(values: V, build: (p: Placeholders<V>) => string): NamedStatement {
  const keys = Object.keys(values);
  // A map of placeholders, not a query row: the one cast the store's no-cast rule allows, for the key types.
  // eslint-disable-next-line no-restricted-syntax
  const placeholders = Object.fromEntries(keys.map((key, i) => [key, `$${i + 1}`])) as Placeholders<V>;
  const used = new Set<string>();
  const tracked = new Proxy(placeholders, {
    get(target, key) {
      if (typeof key !== 'string' || !(key in target)) throw new Error(`statement parameter ${String(key)} is not among its values`);
      used.add(key);
      return Reflect.get(target, key);
    },
  });
  const text = build(tracked);
  const unused = keys.filter((key) => !used.has(key));
  if (unused.length) throw new Error(`statement parameters never used in its text: ${unused.join(', ')}`);
  return { text, params: keys.map((key) => values[key]) };
}

/**
 * As `named`, with a second set of values composed in (a guard's CTEs on a statement): the
 * builder gets the placeholders of both; a key in both is one parameter and must carry the same
 * value in each (thrown otherwise, naming it).
 */
export function namedComposed<V extends Record<string, unknown>, G extends Record<string, unknown>>(
  values: V,
  extra: G,
  build: (p: Placeholders<V>, g: Placeholders<G>) => string,
): NamedStatement {
  for (const key of Object.keys(extra)) if (key in values && !Object.is(values[key], extra[key])) throw new Error(`statement parameter ${key} has two values`);
  const merged: Record<string, unknown> = { ...extra, ...values };
  // Both sets' keys are the merged set's: the one place the two placeholder types are told so.
  // eslint-disable-next-line no-restricted-syntax
  return named(merged, (p) => build(p as Placeholders<V>, p as Placeholders<G>));
}
