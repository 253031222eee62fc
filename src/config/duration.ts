/**
 * Duration parsing for configuration values.
 *
 * Accepts `1500ms`, `30s`, `5m`, `1h`, `7d`, a bare number of milliseconds, and the
 * ISO-8601 time form `PT30S`, `PT1M30S`, `PT0.5S`. Returns milliseconds.
 */
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export function parseDuration(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : undefined;
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const simple = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text);
  if (simple) return Math.round(Number(simple[1]) * UNIT_MS[simple[2]]);
  const iso = /^PT(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?$/i.exec(text);
  if (iso && (iso[1] || iso[2] || iso[3])) {
    const [h, m, s] = [iso[1], iso[2], iso[3]].map((part) => Number(part ?? 0));
    return Math.round(h * 3_600_000 + m * 60_000 + s * 1000);
  }
  return undefined;
}
