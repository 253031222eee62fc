/**
 * `npm start` as a user runs it: the embedded default (Temporal dev server child +
 * PGlite under a fresh data dir) serves a demo execution that succeeds and one that
 * lands in the DLQ, driven over real HTTP as the README's curl examples do. And a bad
 * configuration stops start-up with a message naming the key.
 */
import { once } from 'node:events';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanUpMainProcesses, startMainExpectingExit, startMainUp } from '../helpers/main-process';
import { until } from '../helpers/until';

describe('start-up configuration errors', () => {
  // A port the demo's REST worker (the first listener) is told to use, held by the test: a bad
  // key is named before any port is bound, whatever holds the ports. Everything else is fresh
  // (data dir, every other port 0), so nothing on the machine (a developer's own npm start on the
  // default ports) can meet these starts.
  let held: Server;
  beforeAll(async () => {
    held = createServer();
    await new Promise<void>((resolve, reject) => held.once('error', reject).listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    cleanUpMainProcesses();
    await new Promise((resolve) => held.close(resolve));
  });

  it.each([
    [{ PIPELINE_ORCHESTRATOR_WORKER_REST_REQUEST_TIMEOUT: 'soonish' }, /pipeline\.orchestrator\.worker\.rest\.request-timeout must be a duration/],
    [{ PIPELINE_ORCHESTRATOR_DLQ_PROVIDER: 'kafka' }, /pipeline\.orchestrator\.dlq-provider: unknown provider "kafka"/],
    [
      { PIPELINE_ORCHESTRATOR_WORKER_WORKFLOW_BUNDLE: '/nonexistent/workflows.js' },
      /pipeline\.orchestrator\.worker\.workflow-bundle: cannot read \/nonexistent\/workflows\.js \(ENOENT\)/,
    ],
    [{ PIPELINE_ROLE: 'worker' }, /pipeline\.role=worker needs the shared Postgres/],
  ])('refuses to start with %o, naming the key before any port', async (env, message) => {
    const { code, output } = await startMainExpectingExit({ ...env, PIPELINE_DEMO_REST_PORT: String((held.address() as AddressInfo).port) });
    expect(output.stderr).toMatch(message);
    expect(code).toBe(2);
  });
});

describe('npm start on the embedded default', () => {
  afterAll(cleanUpMainProcesses);

  it('serves a demo execution that succeeds and one that lands in the DLQ, then stops cleanly', async () => {
    // A fresh data dir and every port 0: the service binds free ones and names them in its service_started line.
    const { child, output, env, ports } = await startMainUp({ PIPELINE_DEFAULTS_RETRY_WAIT_MS: '50' });
    const dataDir = env.PIPELINE_DATA_DIR;
    // The banner follows the service_started line on stderr.
    await until(() => output.stderr.includes('Admin token'), 30_000, 'the banner');
    const [port, uiPort] = [ports.http, ports.temporalUi];
    expect(ports).toMatchObject({ http: expect.any(Number), temporal: expect.any(Number), demoRest: expect.any(Number), demoGrpc: expect.any(Number) });
    expect(output.stderr).toContain(`http://localhost:${port}/pipeline`);
    expect(output.stderr).toContain(`Web UI http://localhost:${uiPort}`);
    expect(statSync(join(dataDir, 'admin-token')).mode & 0o777).toBe(0o600);
    const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    const api = `http://127.0.0.1:${port}/pipeline`;
    const call = (method: string, path: string, body?: unknown) =>
      fetch(`${api}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: body ? JSON.stringify(body) : undefined,
      });

    expect((await call('POST', '/api/tenants/acme/executions', { pipeline: 'demo', executionId: 'order-1', input: { orderId: 1 } })).status).toBe(202);
    expect(
      (await call('POST', '/api/tenants/acme/executions', { pipeline: 'demo', executionId: 'order-2', input: { fail: { charge: { mode: 'retryable' } } } }))
        .status,
    ).toBe(202);
    expect(
      (
        await call('POST', '/api/tenants/acme/executions', {
          pipeline: 'demo',
          executionId: 'order-3',
          input: { fail: { notify: { mode: 'non_retryable' } } },
        })
      ).status,
    ).toBe(202);

    const waitStatus = async (id: string) => {
      let record: { status?: string } = {};
      await until(
        async () => {
          record = await (await call('GET', `/admin/tenants/acme/executions/${id}`)).json();
          return record.status === 'SUCCEEDED' || record.status === 'FAILED';
        },
        60_000,
        `${id} to finish`,
      );
      return record;
    };
    expect(await waitStatus('order-1')).toMatchObject({ status: 'SUCCEEDED', currentStepIndex: 6 });
    expect(await waitStatus('order-2')).toMatchObject({ status: 'FAILED', failedStepIndex: 2, terminalReason: 'retry_exhausted' });
    const dlq = await (await call('GET', '/admin/tenants/acme/dlq?terminalReason=retry_exhausted')).json();
    expect(dlq.items).toHaveLength(1);
    expect(dlq.items[0].envelope).toMatchObject({ executionId: 'order-2', errorCode: 'DEMO_RETRYABLE', retriesObserved: 5 });
    const effects = await (await call('GET', '/admin/tenants/acme/executions/order-1/effects')).json();
    expect(effects.items).toMatchObject([
      { stepName: 'charge', status: 'SUCCEEDED', hasResult: true },
      { stepName: 'notify', status: 'SUCCEEDED', transitionKey: 'order-1:3:1' },
    ]);
    // The REST step (worker kit) rejecting: non_retryable, with the kit's platform in the envelope.
    expect(await waitStatus('order-3')).toMatchObject({ status: 'FAILED', failedStepIndex: 3, terminalReason: 'non_retryable', lastErrorCode: 'HTTP_422' });
    const rejected = await (await call('GET', '/admin/tenants/acme/dlq?errorCode=HTTP_422')).json();
    expect(rejected.items[0].envelope).toMatchObject({ executionId: 'order-3', transport: 'REST', platform: expect.stringMatching(/^demo-kit\//) });

    // Every stdout line is one JSON object.
    for (const line of output.stdout.split('\n').filter(Boolean)) expect(() => JSON.parse(line)).not.toThrow();

    child.kill('SIGINT');
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);

    const lines = output.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line));
    // The SDK's lines that only repeat the engine's own events (order-2's six attempts, the two
    // failed runs) are debug, not warn: the engine's own lines say it once.
    expect(lines.filter((l) => l.event === 'execution_step_retry_scheduled').length).toBeGreaterThanOrEqual(5);
    expect(lines.filter((l) => l.event === 'temporal_sdk' && ['Activity failed', 'Workflow failed'].includes(l.sdkMessage))).toEqual([]);
    // A clean stop: nothing warns once it begins (no poll or dial errors), and it ends with one clear line.
    const stopping = lines.findIndex((l) => l.event === 'service_stopping');
    expect(stopping).toBeGreaterThan(0);
    expect(lines.slice(stopping).filter((l) => l.level !== 'info')).toEqual([]);
    expect(lines.at(-1)).toMatchObject({ event: 'service_stopped', signal: 'SIGINT', ms: expect.any(Number) });
    expect(output.stderr.trimEnd().split('\n').at(-1)).toMatch(/^ {2}Stopped \(SIGINT\) in \d+\.\d s: the API, the worker and the Temporal dev server\.$/);
  });
});
