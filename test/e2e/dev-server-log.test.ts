/**
 * The embedded dev server's own log lines reach the service's log (at warn) only when they
 * report something an operator acts on. Opening a history in the Temporal UI asks for a page
 * over the frontend's cap; the server warns "GetHistory page size is larger than threshold"
 * and answers the capped page. That line is forwarded at debug: the server wrote it (read in
 * its own output file), the service's log at info has no trace of it.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server';
import { captureLog } from '../helpers/log-capture';
import { scaled } from '../helpers/time-scale';
import { until } from '../helpers/until';

const WARNING = 'GetHistory page size is larger than threshold';
let server: DevServer;
let connection: Connection;
const output = join(mkdtempSync(join(tmpdir(), 'dev-server-log-')), 'server.log');
const captured = captureLog();

beforeAll(async () => {
  server = await startDevServer({ log: captured.log, outputFile: output });
  connection = await Connection.connect({ address: server.address });
}, scaled(120_000));
afterAll(async () => {
  await connection?.close();
  await server?.stop();
});

describe("the embedded dev server's log lines in the service's log", { timeout: scaled(120_000) }, () => {
  it("a history read with the Temporal UI's large page leaves no warning in the service's log", async () => {
    const client = new Client({ connection, namespace: server.namespace });
    // A run no worker serves: its history exists (started, task scheduled).
    const handle = await client.workflow.start('nobodyRunsThis', { workflowId: `history-page-${Date.now()}`, taskQueue: 'dev-server-log-nobody', args: [] });
    try {
      const page = await connection.workflowService.getWorkflowExecutionHistory({
        namespace: server.namespace,
        execution: { workflowId: handle.workflowId, runId: handle.firstExecutionRunId },
        maximumPageSize: 5000,
      });
      expect(page.history?.events?.length).toBeGreaterThan(0);
      // The server wrote the warning (its own output, every field as it wrote it)…
      await until(() => existsSync(output) && readFileSync(output, 'utf8').includes(WARNING), 30_000, 'the server to write its page-size warning');
      // …and the service's log, read after the server's line was forwarded, carries none of it.
      const forwarded = captured.lines.filter((line) => line.event === 'temporal_dev_server');
      expect(forwarded.filter((line) => String(line.serverMessage).includes(WARNING))).toEqual([]);
    } finally {
      await handle.terminate('the test is done with it');
    }
  });
});
