/**
 * What the CLI writes and asks. With `--json`, stdout carries only the API's JSON (one
 * document per command); tables, progress and prompts go to stderr or are left out.
 */
import { createInterface } from 'node:readline/promises';

export interface Io {
  json: boolean;
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
  input: NodeJS.ReadableStream;
}

export function defaultIo(json: boolean): Io {
  return { json, out: process.stdout, err: process.stderr, input: process.stdin };
}

/** The command's result: JSON on stdout with --json, else the human text. */
export function emit(io: Io, value: unknown, human: () => string): void {
  io.out.write(io.json ? `${JSON.stringify(value, null, 2)}\n` : `${human()}\n`);
}

/** Progress and notes: stderr, so stdout stays the result. */
export function note(io: Io, line: string): void {
  io.err.write(`${line}\n`);
}

/** A plain text table, columns padded to their widest cell. */
export function table(rows: Record<string, unknown>[], columns: [key: string, title: string][]): string {
  if (rows.length === 0) return '(none)';
  const cells = rows.map((row) => columns.map(([key]) => cell(row[key])));
  const widths = columns.map(([, title], i) => Math.max(title.length, ...cells.map((r) => r[i].length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  return [line(columns.map(([, title]) => title)), ...cells.map(line)].join('\n');
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/**
 * Asks a yes/no question on stderr; only "y" or "yes" is yes (end of input is no, and so is
 * `signal` aborting: a second Ctrl-C while the question waits).
 */
export async function confirm(io: Io, question: string, signal?: AbortSignal): Promise<boolean> {
  const rl = createInterface({ input: io.input, output: io.err, terminal: false });
  try {
    io.err.write(`${question} [y/N] `);
    const answer = await new Promise<string | null>((resolve) => {
      rl.once('line', resolve);
      rl.once('close', () => resolve(null));
      signal?.addEventListener('abort', () => resolve(null), { once: true });
    });
    if (answer === null) io.err.write('\n');
    return answer !== null && /^\s*y(es)?\s*$/i.test(answer);
  } finally {
    rl.close();
  }
}

/**
 * Asks a question with lettered answers on stderr (`[r]esume`, `[p]aused`…) and returns the
 * chosen letter; an empty line, end of input or `signal` aborting (a second Ctrl-C) is
 * `fallback`. An unknown answer asks again.
 */
export async function choose<T extends string>(io: Io, question: string, letters: readonly T[], fallback: T, signal?: AbortSignal): Promise<T> {
  const rl = createInterface({ input: io.input, output: io.err, terminal: false });
  try {
    for (;;) {
      io.err.write(`${question} `);
      const answer = await new Promise<string | null>((resolve) => {
        rl.once('line', resolve);
        rl.once('close', () => resolve(null));
        signal?.addEventListener('abort', () => resolve(null), { once: true });
      });
      if (answer === null) {
        io.err.write('\n');
        return fallback;
      }
      const letter = answer.trim().toLowerCase().slice(0, 1);
      if (letter === '') return fallback;
      const chosen = letters.find((l) => l === letter);
      if (chosen) return chosen;
    }
  } finally {
    rl.close();
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
