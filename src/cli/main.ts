/**
 * pipeline-admin: the operator CLI over the admin API. `npx pipeline-admin --help`.
 */
import { executionFixture, forkOne } from './commands/repair';
import { Command, CommanderError, Option } from 'commander';
import { AdminClient } from './client';
import { rememberFlags } from './invoked';
import { dlqGroups, dlqList, executionShow, jobShow, jobsList, triage } from './commands/read';
import { jobControl, jobFollow, redriveBatch, redriveOne, type FollowOptions } from './commands/redrive';
import { CliError, EXIT, exitCodesHelp } from './exit-codes';
import { defaultIo, note } from './io';
import { DEFAULT_CONFIG_FILE, resolveSettings, type GlobalFlags } from './settings';
import { CONFIRMED_DISPOSITIONS, REDRIVE_INTENTS } from '../spec-words';
import { errorMessage } from '../errors';

const program = new Command('pipeline-admin')
  .description('Operate the pipeline orchestrator: read the DLQ and its failure groups, inspect executions, re-drive one or a fleet.')
  .option('--url <url>', 'API base (env PIPELINE_URL; default http://127.0.0.1:8080/pipeline)')
  .option('--token <token>', 'admin bearer token (env PIPELINE_TOKEN)')
  .option('--token-file <path>', 'read the token from a file (default: .data/admin-token of the embedded default, when present)')
  .option('--tenant <id>', 'tenant (env PIPELINE_TENANT); every command but `triage --all-tenants` needs one')
  .option('--config <file>', `JSON file with url, token or tokenFile, tenant (env PIPELINE_ADMIN_CONFIG; default ${DEFAULT_CONFIG_FILE} when present)`)
  .option('--timeout <seconds>', 'deadline of each API call', '30')
  .option('--json', "print the API's JSON on stdout, nothing else")
  .showHelpAfterError()
  .addHelpText(
    'after',
    `\nSettings: flags win over environment variables, which win over the config file, which wins over the defaults.
The token: --token, then --token-file, then PIPELINE_TOKEN, then the config file's token or tokenFile, then .data/admin-token.\n\n${exitCodesHelp()}`,
  )
  .exitOverride();

function context(command: Command) {
  const flags = command.optsWithGlobals() as GlobalFlags & { json?: boolean };
  const io = defaultIo(flags.json === true);
  rememberFlags(flags);
  return { client: new AdminClient(resolveSettings(flags)), io };
}

const follow = (options: { followTimeout: string; follow: boolean }): FollowOptions & { follow: boolean } => {
  const seconds = Number(options.followTimeout);
  if (!(seconds >= 1)) throw new CliError(`--follow-timeout ${options.followTimeout}: seconds, at least 1`, 'USAGE');
  return { followTimeout: seconds, pollMs: 1000, follow: options.follow };
};

const dlq = program.command('dlq').description('the Execution DLQ (read-only)');
dlq
  .command('list')
  .description('DLQ envelopes, newest first')
  .option('--terminal-reason <reason>', 'retry_exhausted | non_retryable')
  .option('--error-code <code>')
  .option('--limit <n>', '1–500')
  .option('--cursor <cursor>', 'the next page, as the previous one printed')
  .action(async (options, command) => {
    const { client, io } = context(command);
    await dlqList(client, io, options);
  });
dlq
  .command('groups')
  .description('unredriven envelopes grouped by failure signature, largest first')
  .option('--terminal-reason <reason>', 'retry_exhausted | non_retryable')
  .option('--error-code <code>')
  .option('--limit <n>', 'at most this many groups, 1–500 (default 100)')
  .action(async (options, command) => {
    const { client, io } = context(command);
    await dlqGroups(client, io, options);
  });

const executions = program.command('executions').description('executions');
executions
  .command('show <executionId>')
  .description('the record, its Command effects, and its story (runs, attempts, re-drives)')
  .action(async (executionId, _options, command) => {
    const { client, io } = context(command);
    await executionShow(client, io, executionId);
  });
executions
  .command('fixture <executionId>')
  .description('a FAILED execution as a test fixture file (needs a token with readPayloads): runPipeline(pipeline, fromFixture(file)) replays it')
  .option('--out <file>', 'where to write it (default <executionId>.fixture.json, mode 0600: it holds payload values)')
  .action(async (executionId, options, command) => {
    const { client, io } = context(command);
    await executionFixture(client, io, executionId, options);
  });

program
  .command('redrive <executionId>')
  .description('re-drive one execution: reads its version, shows the dry run, asks, then follows the run to its end')
  .requiredOption('--reason <text>', 'why (kept in the audit row)')
  .option('--allow-failed', 'permit re-driving a FAILED or REMOTE_OUTCOME_UNKNOWN execution')
  .addOption(new Option('--intent <intent>', 'deliberately retry the failed Command step').choices(REDRIVE_INTENTS))
  .addOption(new Option('--confirmed-disposition <d>', 'REMOTE_OUTCOME_UNKNOWN: you checked the call made no effect').choices(CONFIRMED_DISPOSITIONS))
  .option(
    '--override-evidence',
    "with --confirmed-disposition NOT_APPLIED: re-drive although the worker's record says it took the call (only with proof it made no effect; audited with --reason)",
  )
  .option(
    '--patch <file>',
    "correct the resumed step's input with an RFC 7396 merge patch in this JSON file (with --allow-failed; admin or repair token); the dry run shows the diff",
  )
  .option('--input <file>', "replace the resumed step's input with this JSON file's (with --allow-failed; admin or repair token)")
  .option('--dry-run', 'show what the re-drive would do (every check runs, nothing changes) and stop: exit 0 if it would be admitted, 3 if refused')
  .option('-y, --yes', 'do not ask')
  .option('--no-follow', 'do not wait for the run to end')
  .option('--follow-timeout <seconds>', 'stop following after this long', '600')
  .action(async (executionId, options, command) => {
    const { client, io } = context(command);
    await redriveOne(client, io, executionId, { ...options, ...follow(options) });
  });

program
  .command('fork <executionId>')
  .description('start a new execution of the same pinned version from a step of this one (its resume step, or 0), optionally with a corrected input')
  .requiredOption('--new-id <executionId>', "the new execution's id")
  .requiredOption('--reason <text>', 'why (kept with the lineage)')
  .option('--from-step <index>', 'the step to start at: the resume step (default) or 0 (the original input, while Temporal keeps the first run)')
  .option('--patch <file>', "correct that step's input with an RFC 7396 merge patch in this JSON file")
  .option('--input <file>', "replace that step's input with this JSON file's")
  .option('--dry-run', 'show the plan (the Command steps it runs again under new keys) and stop')
  .option('-y, --yes', 'do not ask')
  .action(async (executionId, options, command) => {
    const { client, io } = context(command);
    await forkOne(client, io, executionId, options);
  });

program
  .command('redrive-batch')
  .description(
    're-drive a fleet as one bulk job: dry run, confirmation, then a live progress bar (Ctrl-C pauses the job at once, then asks whether to resume, stay paused or abort)',
  )
  .option('--group <groupId>', 'a failure group from `dlq groups`')
  .option('--error-code <code>')
  .option('--terminal-reason <reason>')
  .option('--step <name>')
  .option('--from <iso>', 'envelopes written at or after')
  .option('--to <iso>', 'envelopes written before')
  .option('--ids <a,b,c>', 'these executions instead of a DLQ filter')
  .requiredOption('--reason <text>', 'why (kept in every audit row)')
  .option('--allow-failed', 'permit re-driving FAILED executions')
  .addOption(new Option('--intent <intent>').choices(REDRIVE_INTENTS))
  .option('--rate <perSecond>', 'items per second, 0.1–300 (default 10)')
  .option('--batch-size <n>', 'at most this many re-driven runs in flight, 1–1000 (default 50)')
  .option('--canary <n>', 're-drive n first and halt if they fail again')
  .option('--dry-run', 'show the counts and a sample plan (nothing changes) and stop: exit 0, or 3 if nothing would be re-driven')
  .option('-y, --yes', 'do not ask')
  .option('--no-follow', 'start the job and return')
  .option('--follow-timeout <seconds>', 'stop following after this long', '86400')
  .action(async (options, command) => {
    const { client, io } = context(command);
    await redriveBatch(client, io, { ...options, ...follow(options) });
  });

const jobs = program
  .command('jobs')
  .description('bulk re-drive jobs: list (default), show, pause, resume, abort')
  .option('--limit <n>', '1–500')
  .option('--cursor <cursor>', 'the next page, as the previous one printed')
  .action(async (options, command) => {
    const { client, io } = context(command);
    await jobsList(client, io, options);
  });
jobs
  .command('show <jobId>')
  .description('a job: status, halt reason, counts, rate, ETA')
  .option(
    '--follow',
    "follow it with a progress bar until it finishes or pauses (redrive-batch's exit codes; Ctrl-C pauses it at once, then asks whether to resume, stay paused or abort)",
  )
  .option('--follow-timeout <seconds>', 'stop following after this long', '86400')
  .action(async (jobId, options, command) => {
    const { client, io } = context(command);
    if (options.follow) await jobFollow(client, io, jobId, follow(options));
    else await jobShow(client, io, jobId);
  });
for (const action of ['pause', 'resume', 'abort'] as const) {
  jobs
    .command(`${action} <jobId>`)
    .description(`${action} a job`)
    .option('--reason <text>', "kept in the job's control log")
    .action(async (jobId, options, command) => {
      const { client, io } = context(command);
      await jobControl(client, io, action, jobId, options);
    });
}

program
  .command('triage')
  .description("the tenant's triage: DLQ growth, rejects, checkpoint backlog, with the first action")
  .option('--window <duration>', '1m–24h (default 15m)')
  .option('--all-tenants', 'every tenant at once (a token without a tenant allow-list; no --tenant needed)')
  .action(async (options, command) => {
    const { client, io } = context(command);
    await triage(client, io, options);
  });

try {
  await program.parseAsync(process.argv);
  process.exitCode = EXIT.OK.code;
} catch (err) {
  if (err instanceof CommanderError) {
    // Help and version end well; every other parse error is a usage error (commander printed it).
    process.exitCode = err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.exitCode === 0 ? EXIT.OK.code : EXIT.USAGE.code;
  } else if (err instanceof CliError) {
    note(defaultIo(false), `pipeline-admin: ${err.message}`);
    process.exitCode = EXIT[err.exit].code;
  } else {
    note(defaultIo(false), `pipeline-admin: unexpected error: ${errorMessage(err)}`);
    process.exitCode = EXIT.FAILURE.code;
  }
}
