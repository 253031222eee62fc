/**
 * `fromFixture(file)`: a production failure (`pipeline-admin executions fixture <id>`) as the
 * input of an in-memory run. `runPipeline(pipeline, fromFixture(file))` runs the pipeline from
 * the failed step with the input it failed on, under the execution's own ids, so a test written
 * against it fails as production did until the fix, and passes after it.
 */
import { readFileSync } from 'node:fs';
import type { ExecutionFixture } from '../repair/fixture';

const FORMAT = 'pipeline-orchestrator/fixture@1';

/** A fixture read by fromFixture: runPipeline starts at its failed step with its input. */
export class FixtureInput {
  constructor(readonly fixture: ExecutionFixture) {}
}

/** Reads a fixture file (or takes its parsed document); throws naming the file when it is not one. */
export function fromFixture(file: string | ExecutionFixture): FixtureInput {
  const where = typeof file === 'string' ? file : 'the fixture';
  let doc: ExecutionFixture;
  try {
    doc = typeof file === 'string' ? (JSON.parse(readFileSync(file, 'utf8')) as ExecutionFixture) : file;
  } catch (err) {
    throw new Error(`${where} cannot be read as JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (doc?.format !== FORMAT) throw new Error(`${where} is not a fixture of pipeline-admin executions fixture (format ${FORMAT})`);
  return new FixtureInput(doc);
}

/** Where a fixture's run starts, checked against the pipeline it is run with. */
export function fixtureStart(input: FixtureInput, pipeline: { name: string; version: number; steps: { name: string }[] }) {
  const { fixture } = input;
  if (fixture.pipeline !== pipeline.name) throw new Error(`the fixture is of pipeline "${fixture.pipeline}", not "${pipeline.name}"`);
  const index = fixture.failedStep.index;
  const name = pipeline.steps[index]?.name;
  if (fixture.failedStep.name !== null && name !== fixture.failedStep.name)
    throw new Error(
      `the fixture failed at step ${index} "${fixture.failedStep.name}" of version ${fixture.pipelineVersion}; this definition (version ${pipeline.version}) has ${name ? `"${name}"` : 'no step'} there`,
    );
  return { stepIndex: index, input: fixture.input, tenantId: fixture.tenantId, executionId: fixture.executionId };
}
