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

export function named<V extends Record<string, unknown>>(values: V, build: (p: { readonly [K in keyof V]: string }) => string): NamedStatement {
  const keys = Object.keys(values);
  // A map of placeholders, not a query row: the one cast the store's no-cast rule allows, for the key types.
  // eslint-disable-next-line no-restricted-syntax
  const placeholders = Object.fromEntries(keys.map((key, i) => [key, `$${i + 1}`])) as { readonly [K in keyof V]: string };
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
