/**
 * `pipeline.pipelines-module`: `npm start` registers a deployment's own pipelines from a
 * module it names, without a copy of `src/main.ts`. The real service (embedded default, its
 * own process) runs an execution of the README's module (examples/readme/pipelines.ts) to its
 * result, with the demo and its workers left out; a module it cannot use stops start-up with
 * exit 2 naming the key.
 */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanUpMainProcesses, startMainExpectingExit, startMainUp } from '../helpers/main-process';

afterAll(cleanUpMainProcesses);

const fixtures = join('test', 'fixtures', 'pipelines-module');

describe('pipeline.pipelines-module', () => {
  it('registers the module’s pipelines instead of the demo and runs an execution of one to its result', async () => {
    const { child, env, ports } = await startMainUp({ PIPELINE_PIPELINES_MODULE: join('examples', 'readme', 'pipelines.ts') });
    // The demo's remote workers are not started when a module names the pipelines.
    expect(ports).toMatchObject({ http: expect.any(Number), demoRest: null, demoGrpc: null });
    const token = readFileSync(join(env.PIPELINE_DATA_DIR, 'admin-token'), 'utf8').trim();
    const call = (method: string, path: string, body?: unknown) =>
      fetch(`http://127.0.0.1:${ports.http}/pipeline${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });

    const listed = await (await call('GET', '/admin/tenants/acme/pipelines')).json();
    expect(listed.items.map((item: { pipeline: string; currentVersion: number }) => [item.pipeline, item.currentVersion])).toEqual([['greetings', 1]]);
    const demo = await call('POST', '/api/tenants/acme/executions', { pipeline: 'demo', executionId: 'd-1', input: {} });
    expect(demo.status).toBe(422);
    expect((await demo.json()).code).toBe('UNKNOWN_PIPELINE');

    const submitted = await call('POST', '/api/tenants/acme/executions', { pipeline: 'greetings', executionId: 'g-1', input: { name: 'ada' } });
    expect(submitted.status).toBe(202);
    let result: Response | undefined;
    // The long poll answers 409 while the execution has not ended after `wait`; ask again until it has.
    for (let asked = 0; asked < 10 && (result?.status ?? 409) === 409; asked++) result = await call('GET', '/api/tenants/acme/executions/g-1/result?wait=30s');
    expect(result!.status).toBe(200);
    expect((await result!.json()).output).toEqual({ greeting: 'HELLO ADA' });

    child.kill('SIGINT');
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
  });

  it.each([
    ['a missing file', join(fixtures, 'absent.ts'), /no file at .*absent\.ts/],
    ['a module exporting nothing usable', join(fixtures, 'nothing-usable.ts'), /exports neither a default export nor `pipelines` \(its exports: greeting\)/],
    ['a duplicate name and version', join(fixtures, 'duplicate.ts'), /exports pipeline "greetings" version 1 twice/],
  ])('stops start-up with exit 2 naming the key for %s', async (_, path, message) => {
    const { code, output } = await startMainExpectingExit({ PIPELINE_PIPELINES_MODULE: path });
    expect(code).toBe(2);
    expect(output.stderr).toMatch(/^pipeline-orchestrator: pipeline\.pipelines-module: /m);
    expect(output.stderr).toMatch(message);
    expect(output.stderr).not.toMatch(/at .*\(.*\.ts:\d+/);
  });
});
