/**
 * The pipelines a deployment registers, loaded from its own module at start-up
 * (`pipeline.pipelines-module`), so a team registers its pipelines without copying the
 * service's entry point. The module exports them as its default export or as `pipelines`:
 *
 * ```ts
 * export default [ordersV1, ordersV2];                 // or one pipeline
 * export const pipelines = async () => [await build()]; // or a function returning them
 * ```
 *
 * Every way this can go wrong stops start-up with a ConfigError naming the key and the
 * problem (exit 2): no file, a module that does not load, nothing usable exported, a value
 * that is not a pipeline or not a valid one, a (name, version) exported twice.
 */
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError, errorMessage } from '../errors';
import { definePipeline, type PipelineDefinition, type VersionedPipeline } from './define';

export const PIPELINES_MODULE_KEY = 'pipeline.pipelines-module';

/** What the module may export (as `default` or `pipelines`). */
export type PipelinesExport =
  | PipelineDefinition
  | readonly PipelineDefinition[]
  | (() => PipelineDefinition | readonly PipelineDefinition[] | Promise<PipelineDefinition | readonly PipelineDefinition[]>);

const problem = (detail: string) => new ConfigError(`${PIPELINES_MODULE_KEY}: ${detail}`);
const firstLine = (err: unknown) => errorMessage(err).split('\n')[0];

/** Loads and checks the module's pipelines; `path` is resolved against `cwd`. */
export async function loadPipelinesModule(path: string, cwd = process.cwd()): Promise<VersionedPipeline[]> {
  const file = isAbsolute(path) ? path : resolve(cwd, path);
  if (!existsSync(file)) throw problem(`no file at ${file}${file === path ? '' : ` ("${path}" from ${cwd})`}`);
  let module: Record<string, unknown>;
  try {
    module = await import(pathToFileURL(file).href);
  } catch (err) {
    const typescript = (err as { code?: string }).code === 'ERR_UNKNOWN_FILE_EXTENSION' && /\.[cm]?ts$/.test(file);
    const hint = typescript
      ? ` (a TypeScript module, and this Node ${process.version} does not strip types: compile it to JavaScript with tsc and name the .js file, as examples/team-project does with \`npm run build\`)`
      : '';
    throw problem(`${file} could not be loaded: ${firstLine(err)}${hint}`);
  }
  const exported = module.default ?? module.pipelines;
  if (exported === undefined) {
    const names = Object.keys(module);
    throw problem(`${file} exports neither a default export nor \`pipelines\` (its exports: ${names.length ? names.join(', ') : 'none'})`);
  }
  let value: unknown = exported;
  if (typeof exported === 'function') {
    try {
      value = await (exported as () => unknown)();
    } catch (err) {
      throw problem(`the function ${file} exports threw: ${firstLine(err)}`);
    }
  }
  const items: unknown[] = Array.isArray(value) ? value : [value];
  if (items.length === 0) throw problem(`${file} exports no pipelines (an empty list)`);
  const seen = new Set<string>();
  return items.map((item, index) => {
    const pipeline = asPipeline(item, `${file}, pipeline ${index + 1} of ${items.length}`);
    const id = `"${pipeline.name}" version ${pipeline.version}`;
    if (seen.has(id)) throw problem(`${file} exports pipeline ${id} twice; give the changed definition the next version`);
    seen.add(id);
    return pipeline;
  });
}

function asPipeline(item: unknown, where: string): VersionedPipeline {
  const candidate = item as Partial<PipelineDefinition> | null;
  if (candidate === null || typeof candidate !== 'object' || typeof candidate.name !== 'string' || !Array.isArray(candidate.steps)) {
    const shown = candidate === null || typeof candidate !== 'object' ? String(candidate) : `an object without name and steps`;
    throw problem(`${where} is ${shown}, not a pipeline; declare it with pipeline(name).step(…) or definePipeline({ name, steps })`);
  }
  // Always derived again: a fingerprint on the object may be a spread copy's, not this shape's.
  try {
    return definePipeline(candidate as PipelineDefinition);
  } catch (err) {
    throw problem(`${where}: ${firstLine(err)}`);
  }
}
