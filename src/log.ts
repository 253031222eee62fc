/**
 * Structured logs: one JSON object per line (pino). Event names go in `event`; the
 * spec's names are used verbatim. Nothing here ever logs a payload: callers pass ids,
 * codes and durations only.
 */
import pino, { type DestinationStream, type Logger } from 'pino';

export type Log = Logger;

export function createLog(options: { level?: string; destination?: DestinationStream } = {}): Log {
  return pino(
    {
      level: options.level ?? process.env.LOG_LEVEL ?? 'info',
      base: { service: 'pipeline-orchestrator' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    // Asynchronous writes to stdout, as pino's default; minLength 1 (each line is still written at
    // once) makes `log.flush(cb)` wait for the lines in flight: with 0 it calls back at once, and
    // the shutdown's last words could land above the log lines they follow.
    options.destination ?? pino.destination({ dest: 1, sync: false, minLength: 1 }),
  );
}
