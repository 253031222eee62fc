/**
 * The whole OpenAPI document, exercised by schemathesis (PyPI, installed into
 * .tools/schemathesis by scripts/install-schemathesis.sh, which .ci/run calls) against the
 * real service on loopback (real Postgres, the dev server): generated requests, valid and
 * invalid, for every operation, at a bounded number of examples and a fixed seed. It fails
 * on any 5xx and on any response whose status, content type, headers or body the document
 * does not allow for that operation.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { UNSTORABLE_MESSAGE } from '../../src/storable';
import { ADMIN_TOKEN, startTestEngine, type TestEngine } from '../helpers/engine';

const ROOT = join(import.meta.dirname, '..', '..');
const TOOLS = join(ROOT, '.tools', 'schemathesis');
/** Examples per operation in the fuzzing phase (the examples phase is bounded by the document itself). */
const MAX_EXAMPLES = 10;
const CHECKS = ['not_a_server_error', 'status_code_conformance', 'content_type_conformance', 'response_headers_conformance', 'response_schema_conformance'];

let engine: TestEngine;
let origin = '';

beforeAll(async () => {
  if (!existsSync(join(TOOLS, 'bin', 'st'))) throw new Error('schemathesis is not installed: run bash scripts/install-schemathesis.sh');
  const key = { id: 'k1', key: randomBytes(32).toString('base64') };
  engine = await startTestEngine(
    [definePipeline({ name: 'ok', steps: [localStep('only', (input: unknown) => input)] })],
    // The codec routes are in the document: serve them too.
    { 'pipeline.server.port': 0, 'pipeline.codec.keys': JSON.stringify([key]) },
    { http: true },
  );
  origin = `http://127.0.0.1:${engine.service.ports.http}`;
  // Something to find: an execution in the tenant schemathesis' examples name.
  await engine.start('acme', { pipeline: 'ok', executionId: 'order-1', input: {} });
});
afterAll(async () => {
  await engine?.stop();
});

function schemathesis(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(TOOLS, 'bin', 'st'), args, {
      env: { ...process.env, PYTHONPATH: TOOLS, NO_COLOR: '1', SCHEMATHESIS_HOOKS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

/** One run over the whole document with `checks`, at the suite's seed. */
function runOver(checks: string[], extra: string[] = []) {
  return schemathesis([
    ...extra,
    'run',
    `${origin}/pipeline/openapi.json`,
    '--url',
    origin,
    '--header',
    `Authorization: Bearer ${ADMIN_TOKEN}`,
    '--checks',
    checks.join(','),
    // The coverage phase is left out: schemathesis 4.32's crashes in it on this document (a SystemError in hypothesis' lambda description).
    '--phases',
    'examples,fuzzing',
    // How fast hypothesis generates data depends on the machine's load (a fresh-clone pair at
    // load 10 failed its "too slow" check on the codec routes); what this test asserts is the
    // answers, never the generator's speed.
    '--suppress-health-check',
    'too_slow',
    '--max-examples',
    String(MAX_EXAMPLES),
    '--seed',
    '20261126',
    '--generation-deterministic',
    '--workers',
    '2',
    '--request-timeout',
    '70',
    '--no-color',
  ]);
}

/**
 * A request the document allows may still be refused for the store's state, never for its
 * shape: an execution or job that is not there (404), a version that moved or a state that does
 * not admit the step (409, 422), what the token may do (403: a fixture needs a token with
 * readPayloads, which the suite's admin token lacks), and a cursor the API did not return (400
 * INVALID_CURSOR: a cursor is opaque, taken from a previous page).
 */
const STATE_DEPENDENT_STATUSES = ['2XX', '403', '404', '409', '422'];
const STATE_DEPENDENT_CODES = new Set(['INVALID_CURSOR']);
/**
 * The one rule schemathesis cannot generate for, though the document states it: text without NUL
 * or an unpaired surrogate (`^[^\u0000\ud800-\udfff]*$` on text, which its warnings say it dropped;
 * in a JSON value's description, since JSON Schema has no pattern for every string at any depth).
 */

/** Each "valid request refused" in the report: the answer's body, parsed. */
function refusals(output: string): { status: number; body: any }[] {
  return [...output.matchAll(/ST202 Schema-valid request rejected[\s\S]*?\n\[(\d{3})\][^\n]*\n\s*`(\{.*\})`/g)].map((m) => ({
    status: Number(m[1]),
    body: JSON.parse(m[2]),
  }));
}

describe('schemathesis over the whole document', () => {
  it("refuses no request the document allows, but for the store's state", async () => {
    const config = join(ROOT, '.data', 'schemathesis', 'positive.toml');
    mkdirSync(join(ROOT, '.data', 'schemathesis'), { recursive: true });
    writeFileSync(config, `[checks.positive_data_acceptance]\nexpected-statuses = ${JSON.stringify(STATE_DEPENDENT_STATUSES)}\n`);
    const { output } = await runOver(['positive_data_acceptance'], ['--config-file', config]);
    writeFileSync(join(ROOT, '.data', 'schemathesis', 'positive-run.txt'), output);
    const failures = Number(/ST202 Schema-valid request rejected: (\d+)/.exec(output)?.[1] ?? 0);
    const found = refusals(output);
    // Every failure the summary counts was read here (so none hides from the filter below).
    expect(found.length, output.slice(-10_000)).toBe(failures);
    const shapeRefusals = found.filter(
      ({ body }) =>
        !STATE_DEPENDENT_CODES.has(body.code) &&
        !(body.code === 'VALIDATION_FAILED' && body.issues?.every((issue: any) => issue.message.startsWith(UNSTORABLE_MESSAGE))),
    );
    expect(shapeRefusals, output.slice(-10_000)).toEqual([]);
  });

  it('finds no 5xx and no response the document does not allow', async () => {
    const { code, output } = await runOver(CHECKS);
    // The whole report stays for a reader: .data/schemathesis/last-run.txt.
    mkdirSync(join(ROOT, '.data', 'schemathesis'), { recursive: true });
    writeFileSync(join(ROOT, '.data', 'schemathesis', 'last-run.txt'), output);
    expect(code, output.slice(-20_000)).toBe(0);
    // Every operation of the document was tested, and none ended in an error of the tool's own.
    const selected = /Selected: (\d+)\/(\d+)/.exec(output);
    const tested = /Tested: (\d+)/.exec(output);
    expect(selected && tested && [Number(selected[1]), Number(tested[1])], output.slice(-5_000)).toEqual([Number(selected?.[2]), Number(selected?.[2])]);
    expect(output).not.toMatch(/Runtime Error|ST\d{3} /);
    // It generated requests in earnest: at least a handful per operation.
    const generated = Number(/(\d+) generated/.exec(output)?.[1] ?? 0);
    expect(generated, output.slice(-5_000)).toBeGreaterThanOrEqual(5 * Number(selected?.[2] ?? 0));
  });
});
