/**
 * `npm start`: the service. By default the whole service in one process (`pipeline.role=all`);
 * `PIPELINE_ROLE=api` serves the HTTP API only, `PIPELINE_ROLE=worker` runs the worker and
 * the periodic tasks. With no TEMPORAL_ADDRESS and no DATABASE_URL it runs on the embedded
 * default (Temporal dev server + PGlite under .data/). It registers the pipelines of the module
 * named by `pipeline.pipelines-module`, else the built-in demo.
 *
 * This entry only installs the start-up signal handlers, then loads the service
 * (`service-main.ts`): loading it takes seconds on a busy machine, and a Ctrl-C in them is
 * answered too.
 */

/**
 * Ctrl-C (or a SIGTERM) before the service is up: say so and exit at once. What had started goes
 * with the process (the dev server watches its parent; the embedded Postgres and the demo's
 * workers are in it), so the next start is clean. Replaced by the orderly stop once started.
 */
function interruptedDuringStartUp(signal: NodeJS.Signals): void {
  process.stderr.write(`\n  Stopped (${signal}) during start-up.\n`, () => process.exit(signal === 'SIGINT' ? 130 : 143));
}

/**
 * The launcher's pid, read before anything else: `npm start` (its script `exec`s node) or the `tsx` command runs this. Read once
 * the service is up instead, a launcher killed (-9) in the moment between the service's
 * `service_started` line and that read would already be gone, the read would find init, and
 * the service would live on as an orphan holding its ports and its dev server.
 */
const launcher = process.ppid;

process.once('SIGINT', interruptedDuringStartUp);
process.once('SIGTERM', interruptedDuringStartUp);
// Not a static import: those would load the whole service before the handlers above exist.
const { runService } = await import('./service-main');
runService(() => {
  process.off('SIGINT', interruptedDuringStartUp);
  process.off('SIGTERM', interruptedDuringStartUp);
}, launcher);

export {};
