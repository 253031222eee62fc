/**
 * pipeline-worker-check: drives a transition worker through the wire contract
 * (docs/transition-workers.md) in conformance mode and prints a pass/fail table.
 *
 *   npx pipeline-worker-check http://127.0.0.1:8091/transition
 *   npx pipeline-worker-check --grpc 127.0.0.1:8092 --json
 *
 * Exit codes: 0 every check passed (warnings and skips allowed), 1 a check failed,
 * 2 wrong usage.
 */
import { Command, CommanderError } from 'commander';
import { runChecks } from './checks';
import { formatTable, reportOf } from './report';
import { grpcWorkerClient, restWorkerClient, type WorkerClient } from './worker-client';

interface Flags {
  grpc?: string;
  lookup: string | boolean;
  busyMs: string;
  timeoutMs: string;
  json?: boolean;
}

const program = new Command('pipeline-worker-check')
  .description('Check a REST or gRPC transition worker against the wire contract (docs/transition-workers.md). The worker must run in conformance mode.')
  .argument('[url]', "the REST worker's step URL, e.g. http://127.0.0.1:8091/transition")
  .option('--grpc <host:port>', 'check a gRPC TransitionWorker instead')
  .option('--lookup <template>', 'REST: the disposition lookup URL, {idempotencyKey} standing for the URL-encoded key (default <url>/{idempotencyKey})')
  .option('--no-lookup', 'the worker offers no disposition lookup (REST) / no Lookup (gRPC): those checks are skipped')
  .option('--busy-ms <ms>', 'how long the handler sleeps in the busy and deadline checks', '2000')
  .option('--timeout-ms <ms>', 'the deadline of an ordinary call', '30000')
  .option('--json', 'print one JSON document instead of the table')
  .showHelpAfterError()
  .addHelpText('after', '\nExit codes: 0 conforms (warnings and skips allowed), 1 a check failed, 2 wrong usage.')
  .exitOverride();

function positive(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new CommanderError(2, 'usage', `${name} ${value}: a positive number of milliseconds`);
  return n;
}

async function main(argv: string[]): Promise<number> {
  try {
    program.parse(argv);
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    throw err;
  }
  const flags = program.opts<Flags>();
  const [url] = program.args;
  let client: WorkerClient;
  try {
    const busyMs = positive('--busy-ms', flags.busyMs);
    const timeoutMs = positive('--timeout-ms', flags.timeoutMs);
    if (flags.grpc ? url : !url) throw new CommanderError(2, 'usage', 'give either a REST worker URL or --grpc <host:port>');
    if (flags.grpc) {
      if (!/^[A-Za-z0-9.-]+:\d{1,5}$/.test(flags.grpc)) throw new CommanderError(2, 'usage', `--grpc ${flags.grpc}: host:port`);
      client = grpcWorkerClient(flags.grpc, flags.lookup !== false);
    } else {
      const parsed = URL.canParse(url) ? new URL(url) : null;
      if (!parsed || !/^https?:$/.test(parsed.protocol)) throw new CommanderError(2, 'usage', `${url}: an http(s) URL`);
      const template = flags.lookup === false ? null : typeof flags.lookup === 'string' ? flags.lookup : `${url.replace(/\/$/, '')}/{idempotencyKey}`;
      if (template && !template.includes('{idempotencyKey}')) throw new CommanderError(2, 'usage', '--lookup: the template must contain {idempotencyKey}');
      client = restWorkerClient(url, template);
    }
    const checks = await runChecks(client, { busyMs, timeoutMs });
    const report = reportOf(client.protocol, client.target, checks);
    process.stdout.write(`${flags.json ? JSON.stringify(report, null, 2) : formatTable(report)}\n`);
    return report.passed ? 0 : 1;
  } catch (err) {
    if (err instanceof CommanderError) {
      process.stderr.write(`pipeline-worker-check: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
}

process.exitCode = await main(process.argv);
