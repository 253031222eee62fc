/**
 * The worker's evidence is asked for before a FAILED remote step is re-driven, also when the
 * re-drive resumes under the current version because the pinned one is gone
 * (`resumeUnderCurrentVersion`): the worker it asks is the one the same-named step of the
 * current version calls. Before, the check looked only in the pinned definition, found no
 * step, and let the re-drive run the handler again under a new identity.
 * On the real dev server and Postgres; the worker's lookup is a loopback HTTP server that
 * says it recorded every identity it is asked about, and counts the questions.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipeline, restStep } from '../../src/pipeline/define';
import { startTestEngine, type TestEngine } from '../helpers/engine';

let engine: TestEngine;
let lookup: Server;
const asked: string[] = [];
let transitionUrl: string;
let dispositionUrl: string;
let hangingUrl: string;

const notify = (version: number, steps: string[]) =>
  definePipeline({
    name: 'notify',
    version,
    steps: steps.map((name) => restStep(name, { url: transitionUrl, dispositionUrl }, { retry: { limit: 0 } })),
  });
/** A worker that never answers its transition: the call passes its deadline and parks REMOTE_OUTCOME_UNKNOWN. */
const ping = (version: number, steps: string[]) =>
  definePipeline({
    name: 'ping',
    version,
    steps: steps.map((name) => restStep(name, { url: hangingUrl, dispositionUrl }, { retry: { limit: 0 }, timeoutMs: 1000 })),
  });

beforeAll(async () => {
  lookup = createServer((req, res) => {
    if (req.url === '/hang') return;
    asked.push(decodeURIComponent(req.url!.split('/').pop()!));
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ recorded: true, state: 'DONE' }));
  });
  await new Promise<void>((resolve) => lookup.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(lookup.address() as AddressInfo).port}`;
  dispositionUrl = `${base}/lookup/{idempotencyKey}`;
  hangingUrl = `${base}/hang`;
  // Nothing listens here: the first send is refused (CONNECTION_REFUSED), so the step fails
  // without the worker's answer, and the lookup is what says whether the worker took it.
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  transitionUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/transition`;
  await new Promise((resolve) => closed.close(resolve));
  engine = await startTestEngine([notify(1, ['send']), ping(1, ['call'])]);
});
afterAll(async () => {
  await engine?.stop();
  lookup?.closeAllConnections();
  await new Promise((resolve) => lookup?.close(resolve));
});

const redrive = (executionId: string, body: Record<string, unknown>, query = '') =>
  engine.request('POST', `/admin/tenants/acme/executions/${executionId}/redrive${query}`, {
    body: { reason: 'evidence', allowFailed: true, ...body },
  });

describe("a FAILED remote step's evidence under a changed definition", () => {
  it("is asked of the current version's same-named step when the pinned version is gone, and refuses as it would under the pinned one", async () => {
    await engine.start('acme', { pipeline: 'notify', executionId: 'ev-1', input: {} });
    const failed = await engine.waitFor('acme', 'ev-1', ['FAILED', 'SUCCEEDED']);
    expect(failed).toMatchObject({ status: 'FAILED', failedStepIndex: 0, pipelineVersion: 1, lastErrorCode: 'CONNECTION_REFUSED' });

    // Under the pinned version: refused with the worker's evidence.
    const pinned = await redrive('ev-1', { expectedVersion: failed.version });
    expect(pinned.status).toBe(409);
    expect(await pinned.json()).toMatchObject({ code: 'WORKER_RECORDED_FAILED_ATTEMPT', evidence: { workerRecorded: true, transitionKey: 'ev-1:0:1' } });

    // Version 1 is gone; version 2 has a step inserted before send.
    engine.service.registry.register(notify(2, ['prepare', 'send']));
    engine.service.registry.unregister('notify', 1);
    asked.length = 0;
    // The dry run says what the re-drive then answers.
    const preview = await redrive('ev-1', { expectedVersion: failed.version, resumeUnderCurrentVersion: true }, '?dryRun=true');
    expect([preview.status, await preview.json()]).toMatchObject([200, { admitted: false, status: 409, code: 'WORKER_RECORDED_FAILED_ATTEMPT' }]);
    const refused = await redrive('ev-1', { expectedVersion: failed.version, resumeUnderCurrentVersion: true });
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({
      code: 'WORKER_RECORDED_FAILED_ATTEMPT',
      evidence: { lookup: 'ANSWERED', workerRecorded: true, transitionKey: 'ev-1:0:1' },
    });
    // Asked once per check, about the failed step's one identity (tenant-qualified).
    expect(asked).toEqual(['acme/ev-1:0:1', 'acme/ev-1:0:1']);
    expect(await engine.service.store.get('acme', 'ev-1')).toEqual(failed);

    // The audited override still passes it, as under the pinned version.
    const overridden = await redrive('ev-1', {
      expectedVersion: failed.version,
      resumeUnderCurrentVersion: true,
      confirmedDisposition: 'NOT_APPLIED',
      overrideEvidence: true,
    });
    expect(overridden.status).toBe(202);
    expect(await overridden.json()).toMatchObject({ pipelineVersion: 2, resumeStepIndex: 1 });
  });

  it("checks a REMOTE_OUTCOME_UNKNOWN attestation against the current version's same-named step when the pinned version is gone", async () => {
    await engine.start('acme', { pipeline: 'ping', executionId: 'ev-2', input: {} });
    const parked = await engine.waitFor('acme', 'ev-2', ['REMOTE_OUTCOME_UNKNOWN', 'FAILED', 'SUCCEEDED']);
    expect(parked).toMatchObject({ status: 'REMOTE_OUTCOME_UNKNOWN', pipelineVersion: 1 });
    engine.service.registry.register(ping(2, ['prepare', 'call']));
    engine.service.registry.unregister('ping', 1);
    asked.length = 0;
    const body = { expectedVersion: parked.version, resumeUnderCurrentVersion: true, confirmedDisposition: 'NOT_APPLIED' };
    const refused = await redrive('ev-2', body);
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ code: 'DISPOSITION_CONTRADICTED', evidence: { lookup: 'ANSWERED', workerRecorded: true } });
    expect(asked).toEqual([`acme/${parked.remoteCall!.transitionKey}`]);
    expect(await engine.service.store.get('acme', 'ev-2')).toEqual(parked);
  });
});
