/**
 * The CLI's exit codes: what a script may rely on. One map, printed in `--help`.
 */
export const EXIT = {
  OK: { code: 0, meaning: 'done; a followed re-drive or job ended well' },
  FAILURE: { code: 1, meaning: 'an unexpected error (the message says what)' },
  USAGE: { code: 2, meaning: 'bad flags or arguments, or a request the API refused as invalid (400/413/415)' },
  REFUSED: { code: 3, meaning: 'refused by the service (409/422: VERSION_MISMATCH, EXECUTION_ACTIVE, …; the code is printed)' },
  NOT_FOUND: { code: 4, meaning: 'no such execution or job (404)' },
  UNAVAILABLE: { code: 5, meaning: 'the service, Postgres or Temporal did not answer (connection refused, timeout, 503)' },
  NOT_SUCCEEDED: {
    code: 6,
    meaning: 'a followed re-drive ended FAILED or REMOTE_OUTCOME_UNKNOWN, or a job halted, was paused or aborted, or had items fail again',
  },
  UNAUTHORIZED: { code: 7, meaning: 'missing, wrong or not-allowed token (401/403)' },
  DECLINED: { code: 130, meaning: 'you answered no at the confirmation, or pressed Ctrl-C' },
} as const;

export type ExitName = keyof typeof EXIT;

/** An error the CLI reports in one line and exits with. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exit: ExitName,
    /** the API's problem+json `code`, when the service answered */
    readonly apiCode?: string,
  ) {
    super(message);
  }
}

export function exitCodesHelp(): string {
  return ['Exit codes:', ...Object.values(EXIT).map(({ code, meaning }) => `  ${String(code).padStart(3)}  ${meaning}`)].join('\n');
}
