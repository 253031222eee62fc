/**
 * Encrypted payloads: with pipeline.codec.keys set, Temporal's raw history (as
 * `temporal workflow show --output json` prints it, and as the client fetches it) holds no
 * trace of an input's sentinel string, while the same run without the codec shows it
 * (the control). The codec endpoint decodes a sealed payload back for an admin token only,
 * answers CORS for the configured UI origin only, and keys rotate by keeping old ones.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { Payload } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { workflowIdFor } from '../../src/ids';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { AesGcmCodec } from '../../src/temporal/codec';
import { resolveTemporalCli } from '../../src/temporal/cli';
import { ADMIN_TOKEN, SUBMIT_TOKEN, TENANT_A_TOKEN, startTestEngine, type TestEngine } from '../helpers/engine';

const SENTINEL = `SENTINEL-${randomBytes(6).toString('hex')}`;
const UI_ORIGIN = 'http://localhost:8233';
const key = () => randomBytes(32).toString('base64');
const K1 = { id: 'k1', key: key() };
const K2 = { id: 'k2', key: key() };

const pipeline = definePipeline({
  name: 'secret',
  steps: [
    localStep('copy', (input: { secret: string }) => ({ copied: input.secret })),
    localStep('again', (input: { copied: string }) => ({ again: input.copied })),
  ],
});

let sealed: TestEngine;
let clear: TestEngine;

beforeAll(async () => {
  [sealed, clear] = await Promise.all([
    startTestEngine([pipeline], { 'pipeline.codec.keys': JSON.stringify([K2, K1]), 'pipeline.codec.cors-origins': UI_ORIGIN }),
    startTestEngine([pipeline]),
  ]);
});
afterAll(async () => {
  await Promise.all([sealed?.stop(), clear?.stop()]);
});

/** The history as the temporal CLI prints it (JSON), and the raw payload bytes the client fetches. */
async function history(engine: TestEngine, executionId: string): Promise<{ cli: string; payloads: Payload[] }> {
  const cli = resolveTemporalCli();
  if (cli.type !== 'existing-path') throw new Error('the temporal CLI binary is needed (scripts/install-temporal.sh)');
  const workflowId = workflowIdFor('acme', executionId);
  const text = execFileSync(cli.path, ['workflow', 'show', '--workflow-id', workflowId, '--address', inject('temporalAddress'), '--output', 'json'], {
    encoding: 'utf8',
  });
  const events = (await engine.service.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const payloads: Payload[] = [];
  const walk = (value: unknown): void => {
    if (!value || typeof value !== 'object') return;
    if (value instanceof Uint8Array) return;
    const candidate = value as { data?: unknown; metadata?: unknown };
    if (candidate.data instanceof Uint8Array && candidate.metadata && typeof candidate.metadata === 'object') payloads.push(candidate as Payload);
    // Search attributes stay clear by design (the server indexes them; they hold ids only).
    for (const [field, child] of Object.entries(value)) if (field !== 'searchAttributes') walk(child);
  };
  walk(events);
  return { cli: text, payloads };
}

/** In the CLI's JSON: the text itself, and every payload's `data` (base64 in the JSON) decoded. */
function occurrences(text: string): number {
  let count = text.split(SENTINEL).length - 1;
  const walk = (value: unknown): void => {
    if (!value || typeof value !== 'object') return;
    const data = (value as { data?: unknown }).data;
    if (typeof data === 'string') count += Buffer.from(data, 'base64').toString('latin1').split(SENTINEL).length - 1;
    for (const child of Object.values(value)) walk(child);
  };
  walk(JSON.parse(text));
  return count;
}
const inPayloads = (payloads: Payload[]) => payloads.filter((p) => Buffer.from(p.data!).includes(SENTINEL)).length;

async function runOne(engine: TestEngine, executionId: string) {
  await engine.start('acme', { pipeline: 'secret', executionId, input: { secret: SENTINEL } });
  const record = await engine.waitFor('acme', executionId, ['SUCCEEDED', 'FAILED']);
  expect(record.status).toBe('SUCCEEDED');
}

function codecCall(path: string, body: unknown, token: string | null, headers: Record<string, string> = {}) {
  return sealed.service.app.request(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
    body: JSON.stringify(body),
  });
}

const toJson = (p: Payload) => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v!).toString('base64')])),
  data: Buffer.from(p.data ?? []).toString('base64'),
});

describe('payload codec', () => {
  it('keeps the sentinel out of the raw history with the codec on (and the control shows it without)', async () => {
    await Promise.all([runOne(sealed, 'codec-1'), runOne(clear, 'clear-1')]);
    const [on, off] = await Promise.all([history(sealed, 'codec-1'), history(clear, 'clear-1')]);

    // Control: without the codec the CLI's history and the raw payloads carry the input.
    expect(occurrences(off.cli)).toBeGreaterThan(0);
    expect(inPayloads(off.payloads)).toBeGreaterThan(0);

    // With it: zero occurrences anywhere, and every payload but the search attributes (ids) is sealed under the current key.
    expect(occurrences(on.cli)).toBe(0);
    expect(inPayloads(on.payloads)).toBe(0);
    expect(on.payloads.length).toBeGreaterThan(3);
    const encodings = new Set(on.payloads.map((p) => Buffer.from(p.metadata!.encoding!).toString()));
    expect(encodings).toEqual(new Set(['binary/encrypted']));
    expect(new Set(on.payloads.map((p) => Buffer.from(p.metadata!['encryption-key-id']!).toString()))).toEqual(new Set(['k2']));

    // The result route answers the output in clear with the codec on, as without it: the same JSON.
    const results = await Promise.all([
      sealed.request('GET', '/api/tenants/acme/executions/codec-1/result', { token: SUBMIT_TOKEN }),
      clear.request('GET', '/api/tenants/acme/executions/clear-1/result', { token: SUBMIT_TOKEN }),
    ]);
    const [sealedResult, clearResult] = await Promise.all(results.map((res) => res.json()));
    expect(results.map((res) => res.status)).toEqual([200, 200]);
    expect(sealedResult.output).toEqual({ again: SENTINEL });
    expect(clearResult.output).toEqual(sealedResult.output);
  });

  it('decodes a sealed history payload back for an admin token only', async () => {
    const { payloads } = await history(sealed, 'codec-1');
    const body = { payloads: payloads.map(toJson) };

    const res = await codecCall('/codec/decode', body, ADMIN_TOKEN, { 'x-namespace': 'default' });
    expect(res.status).toBe(200);
    const decoded = (await res.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
    expect(decoded.payloads).toHaveLength(payloads.length);
    const texts = decoded.payloads.map((p) => Buffer.from(p.data, 'base64').toString('utf8'));
    expect(texts.filter((text) => text.includes(SENTINEL)).length).toBeGreaterThan(0);
    expect(new Set(decoded.payloads.map((p) => Buffer.from(p.metadata.encoding, 'base64').toString()))).not.toContain('binary/encrypted');

    // encode round-trips through decode
    const plain = {
      payloads: [{ metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: Buffer.from(JSON.stringify(SENTINEL)).toString('base64') }],
    };
    const encoded = (await (await codecCall('/codec/encode', plain, ADMIN_TOKEN)).json()) as typeof plain;
    expect(Buffer.from(encoded.payloads[0].data, 'base64').includes(SENTINEL)).toBe(false);
    const back = (await (await codecCall('/codec/decode', encoded, ADMIN_TOKEN)).json()) as typeof plain;
    expect(back).toEqual(plain);

    // Nobody else: no token 401, a submit token 403, a tenant-scoped admin 403; none of them sees data.
    for (const [token, status] of [
      [null, 401],
      [SUBMIT_TOKEN, 403],
      [TENANT_A_TOKEN, 403],
    ] as const) {
      const refused = await codecCall('/codec/decode', body, token);
      expect(refused.status).toBe(status);
      expect(await refused.text()).not.toContain(Buffer.from(SENTINEL).toString('base64').slice(0, 8));
    }
    // Bad bodies are 4xx naming the problem; a payload sealed under an unknown key is 422.
    expect((await codecCall('/codec/decode', { payloads: [{ data: '***' }] }, ADMIN_TOKEN)).status).toBe(400);
    const foreign = (await new AesGcmCodec([{ id: 'gone', key: key() }]).encode([{ metadata: {}, data: new Uint8Array([1]) }])).map(toJson);
    const unknown = await codecCall('/codec/decode', { payloads: foreign }, ADMIN_TOKEN);
    expect(unknown.status).toBe(422);
    expect(await unknown.json()).toMatchObject({ code: 'CODEC_PAYLOAD_UNREADABLE', keyId: 'gone' });
  });

  it('answers CORS for the configured UI origin only, preflight without a token', async () => {
    const preflight = (origin: string) =>
      sealed.service.app.request('/codec/decode', {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type,x-namespace' },
      });
    const allowed = await preflight(UI_ORIGIN);
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
    expect(allowed.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('x-namespace');
    expect(allowed.headers.get('access-control-allow-credentials')).toBe('true');
    expect((await preflight('http://evil.example')).headers.get('access-control-allow-origin')).toBeNull();
    // Without pipeline.codec.keys there is no codec endpoint at all.
    expect((await clear.service.app.request('/codec/decode', { method: 'POST' })).status).toBe(404);
  });

  it('rotates keys: the first key seals, older keys still open, a dropped key is named', async () => {
    const old = new AesGcmCodec([K1]);
    const rotated = new AesGcmCodec([K2, K1]);
    const payload = { metadata: { encoding: new TextEncoder().encode('json/plain') }, data: new TextEncoder().encode('"x"') };
    const [underOld] = await old.encode([payload]);
    expect(Buffer.from(underOld.metadata!['encryption-key-id']!).toString()).toBe('k1');
    expect(Buffer.from((await rotated.decode([underOld]))[0].data!).toString()).toBe('"x"');
    const [underNew] = await rotated.encode([payload]);
    expect(Buffer.from(underNew.metadata!['encryption-key-id']!).toString()).toBe('k2');
    await expect(new AesGcmCodec([K2]).decode([underOld])).rejects.toThrow(/key id "k1", which is not in pipeline\.codec\.keys/);
    // Tampering fails authentication.
    const tampered = { ...underNew, data: Uint8Array.from(underNew.data!, (b, i) => (i === 20 ? b ^ 1 : b)) };
    await expect(rotated.decode([tampered])).rejects.toThrow(/does not authenticate/);
  });
});
