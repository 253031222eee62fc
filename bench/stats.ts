/** Small helpers for benchmark figures: bounded-concurrency loops and min/median/max. */
export interface Spread {
  min: number;
  median: number;
  max: number;
  samples: number[];
}

export function spread(samples: number[], digits = 2): Spread {
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = sorted.length / 2;
  const median = sorted.length % 2 ? sorted[Math.floor(mid)] : (sorted[mid - 1] + sorted[mid]) / 2;
  const round = (n: number) => Number(n.toFixed(digits));
  return { min: round(sorted[0]), median: round(median), max: round(sorted[sorted.length - 1]), samples: samples.map(round) };
}

/** Runs `task(i)` for i in [0, n) with at most `concurrency` in flight. */
export async function pool(n: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(concurrency, n) }, async () => {
    while (next < n) await task(next++);
  });
  await Promise.all(lanes);
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}
