/**
 * Routes the Temporal SDK's own log output (TypeScript and the Rust core) into our JSON
 * log (one object per line), at WARN and above, keeping only scalar metadata: no error stacks, no payloads
 * (lines that only repeat one of the service's own events go to debug: isRepeatedBySdk). Also
 * turns off the SDK's signal handlers: the service owns shutdown.
 */
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import type { Log } from '../log';
import { FailureTypes } from '../workflows/types';

/** The pipeline workflow's type name, as the SDK reports it. */
const PIPELINE_WORKFLOW_TYPE = 'pipelineWorkflow';

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

/** The failure types the engine's step activity throws on purpose, each logged by the engine in its own words. */
const EXPECTED_ACTIVITY_FAILURES = new Set<string>([FailureTypes.retryable, FailureTypes.terminal, FailureTypes.duplicateRun]);

/**
 * SDK lines that repeat what the service already logs as its own event, kept at debug rather
 * than warn (about six per failing execution, which flooded the terminal of `npm start`):
 * - "Activity failed" of a step whose failure the engine threw on purpose
 *   (`execution_step_retry_scheduled`, `execution_failed`, `execution_foreign_run_refused`);
 * - "Workflow failed" of a pipeline run: it fails only with the ApplicationFailure the engine
 *   throws for a terminal outcome or a run it did not start, both logged by the engine (a bug
 *   in workflow code fails the workflow task, which stays at warn).
 * - the core's "shutdown_worker rpc errored during worker shutdown" at a stop we asked for.
 * Everything else (a job workflow failing, a task failing, connection trouble) stays at warn.
 */
export function isRepeatedBySdk(message: string, meta: Record<string, unknown> | undefined): boolean {
  // The core's goodbye to the server racing the connection's close at a stop we asked for
  // (seen after Ctrl-C in a terminal): nothing is lost, the server forgets the worker anyway.
  if (message.startsWith('shutdown_worker rpc errored during worker shutdown')) return true;
  if (message === 'Activity failed') {
    const error = meta?.error as { type?: unknown } | undefined;
    return typeof error?.type === 'string' && EXPECTED_ACTIVITY_FAILURES.has(error.type);
  }
  if (message === 'Workflow failed') return meta?.workflowType === PIPELINE_WORKFLOW_TYPE;
  return false;
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
      if (isRepeatedBySdk(entry.message, entry.meta as Record<string, unknown>)) log.debug(fields);
      else if (entry.level === 'ERROR') log.error(fields);
      else if (entry.level === 'WARN') log.warn(fields);
      else log.info(fields);
    }),
  });
}
