/**
 * Routes the Temporal SDK's own log output (TypeScript and the Rust core) into our JSON
 * log (one object per line), at WARN and above, keeping only scalar metadata: no error stacks, no payloads. Also
 * turns off the SDK's signal handlers: the service owns shutdown.
 */
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import type { Log } from '../log';

let installed = false;

function scalarMeta(meta: Record<string, unknown> | undefined): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(meta ?? {})) {
    if (key === 'taskToken') continue;
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') kept[key] = value;
    else if (value instanceof Error) kept[key] = (value as { type?: string }).type ?? value.name;
  }
  return kept;
}

export function installSdkLogging(log: Log, level: 'WARN' | 'INFO' | 'ERROR' = 'WARN'): void {
  if (installed) return;
  installed = true;
  Runtime.install({
    shutdownSignals: [],
    // The Rust core's own logs come through the same logger, so stderr stays JSON too.
    telemetryOptions: { logging: { filter: { core: level, other: level }, forward: {} } },
    logger: new DefaultLogger(level, (entry: LogEntry) => {
      const fields = { event: 'temporal_sdk', sdkMessage: entry.message, ...scalarMeta(entry.meta as Record<string, unknown>) };
      if (entry.level === 'ERROR') log.error(fields);
      else if (entry.level === 'WARN') log.warn(fields);
      else log.info(fields);
    }),
  });
}
