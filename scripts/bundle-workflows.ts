/**
 * Builds the workflows' bundle once, for `pipeline.orchestrator.worker.workflow-bundle`, so
 * a worker starts without bundling them (the Dockerfile runs this at build time):
 *
 *   npm run bundle:workflows -- dist/workflows.js
 *   PIPELINE_ORCHESTRATOR_WORKER_WORKFLOW_BUNDLE=dist/workflows.js npm start
 *
 * Build it from the same source as the service it runs with.
 */
import { resolve } from 'node:path';
import { writeWorkflowBundle } from '../src/temporal/worker';

const target = process.argv[2];
if (!target || process.argv.length > 3) {
  process.stderr.write('usage: npm run bundle:workflows -- <output path, e.g. dist/workflows.js>\n');
  process.exit(2);
}
await writeWorkflowBundle(resolve(target));
process.stdout.write(`${JSON.stringify({ event: 'workflow_bundle_written', path: resolve(target) })}\n`);
