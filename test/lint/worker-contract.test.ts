/**
 * The worker wire protocol has one home, the kit's protocol module and proto
 * (packages/worker-kit/src/protocol.ts, packages/worker-kit/proto/transition_worker.proto), and
 * two written forms: docs/transition-workers.md and docs/worker-api.openapi.json. They must name
 * every header the module says a call carries, every code the service assigns a remote step, and
 * every conformance check; the service keeps no copy of its own.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  IN_PROGRESS_HEADER,
  PLATFORM_HEADER,
  REQUEST_HEADERS,
  SERVICE_REMOTE_CODES,
  TRACE_HEADERS,
  transitionHeaders,
} from '@pipeline-orchestrator/worker-kit/protocol';
import { CHECK_IDS } from '../../src/worker-check/checks';

const root = join(import.meta.dirname, '..', '..');
const doc = readFileSync(join(root, 'docs', 'transition-workers.md'), 'utf8');
const proto = readFileSync(join(root, 'packages', 'worker-kit', 'proto', 'transition_worker.proto'), 'utf8');
const openapi = JSON.parse(readFileSync(join(root, 'docs', 'worker-api.openapi.json'), 'utf8')) as {
  paths: Record<string, Record<string, { parameters?: { name: string; in: string }[]; responses?: Record<string, { headers?: Record<string, unknown> }> }>>;
};
const sent = [
  ...Object.keys(
    transitionHeaders(
      { idempotencyKey: 'a/e:0:1', transitionKey: 'e:0:1', tenantId: 'a', executionId: 'e', attempt: 1, correlationId: 'c', stepName: 's', pipeline: 'p' },
      1000,
    ),
  ),
  ...TRACE_HEADERS,
];

describe('the worker contract in writing', () => {
  it('the OpenAPI document declares exactly the headers a REST call carries', () => {
    const declared = openapi.paths['/transition'].post.parameters!.filter((p) => p.in === 'header').map((p) => p.name.toLowerCase());
    expect(declared.sort()).toEqual([...sent].sort());
  });

  it('a call carries every request header the protocol module names', () => {
    expect(Object.values(REQUEST_HEADERS).filter((name) => !sent.includes(name))).toEqual([]);
  });

  it('the OpenAPI document declares the answer headers the protocol module names', () => {
    const answered = Object.values(openapi.paths['/transition'].post.responses ?? {}).flatMap((response) =>
      Object.keys(response.headers ?? {}).map((name) => name.toLowerCase()),
    );
    expect([PLATFORM_HEADER, IN_PROGRESS_HEADER].filter((name) => !answered.includes(name))).toEqual([]);
  });

  it('the service keeps no proto and no wire header literal of its own (the kit owns them)', () => {
    expect(existsSync(join(root, 'proto'))).toBe(false);
    const files = [
      'src/transports/remote.ts',
      'src/transports/rest.ts',
      'src/transports/grpc.ts',
      'src/transports/worker-problem.ts',
      'src/worker-check/worker-client.ts',
    ];
    const names = [...Object.values(REQUEST_HEADERS), PLATFORM_HEADER, IN_PROGRESS_HEADER, 'x-transition-problem', 'application/problem+json'];
    const literals = files.flatMap((file) => {
      const text = readFileSync(join(root, file), 'utf8');
      return names.filter((name) => text.includes(`'${name}'`)).map((name) => `${file}: '${name}'`);
    });
    expect(literals).toEqual([]);
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
