/**
 * The worker wire contract has three written forms besides the code: docs/transition-workers.md,
 * docs/worker-api.openapi.json and proto/transition_worker.proto. They must name every header the
 * transports send, every code the service assigns a remote step, and every conformance check.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { transitionHeaders } from '../../src/transports/remote';
import { SERVICE_REMOTE_CODES } from '../../src/transports/worker-problem';
import { CHECK_IDS } from '../../src/worker-check/checks';

const root = join(import.meta.dirname, '..', '..');
const doc = readFileSync(join(root, 'docs', 'transition-workers.md'), 'utf8');
const proto = readFileSync(join(root, 'proto', 'transition_worker.proto'), 'utf8');
const openapi = JSON.parse(readFileSync(join(root, 'docs', 'worker-api.openapi.json'), 'utf8')) as {
  paths: Record<string, Record<string, { parameters?: { name: string; in: string }[] }>>;
};
const sent = [
  ...Object.keys(
    transitionHeaders(
      { idempotencyKey: 'a/e:0:1', transitionKey: 'e:0:1', tenantId: 'a', executionId: 'e', attempt: 1, correlationId: 'c', stepName: 's', pipeline: 'p' },
      1000,
    ),
  ),
  'traceparent',
  'tracestate',
];

describe('the worker contract in writing', () => {
  it('the OpenAPI document declares exactly the headers a REST call carries', () => {
    const declared = openapi.paths['/transition'].post.parameters!.filter((p) => p.in === 'header').map((p) => p.name.toLowerCase());
    expect(declared.sort()).toEqual([...sent].sort());
  });

  it('docs/transition-workers.md and the .proto name every header / metadata entry', () => {
    const lowerDoc = doc.toLowerCase();
    expect(sent.filter((name) => !lowerDoc.includes(`\`${name}\``))).toEqual([]);
    expect(sent.filter((name) => !proto.includes(name))).toEqual([]);
  });

  it('docs/transition-workers.md lists every code the service assigns a remote step, and every conformance check', () => {
    expect(SERVICE_REMOTE_CODES.filter((code) => !doc.includes(`\`${code}\``))).toEqual([]);
    expect(CHECK_IDS.filter((id) => !doc.includes(`| \`${id}\` |`))).toEqual([]);
  });
});
