/**
 * "In progress" is not a failure. A REST/gRPC worker that answers "in progress" for the
 * transition identity took the call and has not stored its outcome (its handler still
 * runs, or its outcome store is down). A delivery that got no answer at all after it may
 * have reached the worker (DeliveryUnconfirmedError: a reset, an answer broken off) is
 * treated the same way: a new attempt would be a new key and could run the effect twice. The step's activity asks the same identity again,
 * with backoff, inside a time budget of its own (pipeline.orchestrator.worker.in-progress-budget):
 * no attempt is committed and no Temporal attempt is spent. The activity heartbeats while
 * it waits, with the budget's progress as heartbeat details, so a redelivery after an engine
 * worker crash goes on with the same budget instead of starting a new one.
 *
 * When the budget runs out the caller parks the execution as REMOTE_OUTCOME_UNKNOWN with the
 * answers as evidence (InProgressBudgetExhaustedError), never FAILED.
 */
import type { InProgressEvidence } from '../store/execution-store';
import { DeliveryUnconfirmedError, TransitionInProgressError, type Protocol } from '../transports/remote';

/** The budget's progress, kept in the activity's heartbeat details across Temporal attempts. */
export interface InProgressProgress {
  transitionKey: string;
  /** epoch ms of the first "in progress" answer (or unanswered delivery) for the identity */
  firstAt: number;
  answers: number;
  /** whether the worker itself said "in progress" at least once (it took the call), rather than only unanswered deliveries */
  heard?: boolean;
}

const FIRST_DELAY_MS = 1000;
const MAX_DELAY_MS = 10_000;
/** Kept between the end of the last call and the activity's own Temporal timeout. */
const HARD_STOP_MARGIN_MS = 2000;

/** The worker kept answering "in progress" for the identity past the budget. */
export class InProgressBudgetExhaustedError extends Error {
  constructor(
    readonly protocol: Protocol,
    readonly target: string,
    readonly evidence: InProgressEvidence,
  ) {
    super(
      evidence.state === 'IN_PROGRESS'
        ? `${protocol} worker at ${target} answered "in progress" ${evidence.answers} times for this transition over the ${evidence.budgetMs} ms in-progress budget; its outcome is unknown`
        : `${protocol} worker at ${target} gave no answer to ${evidence.answers} deliveries of this transition over the ${evidence.budgetMs} ms in-progress budget (the connection dropped, or the worker could not be reached, after the identity was first sent); its outcome is unknown`,
    );
    this.name = 'InProgressBudgetExhaustedError';
  }
}

export interface InProgressPacing {
  transitionKey: string;
  budgetMs: number;
  /** the step's call deadline */
  callDeadlineMs: number;
  /**
   * Epoch ms by which this activity attempt must have ended (its Temporal start-to-close).
   * A redelivery that could not end before it is not started: the in-progress answer goes
   * to Temporal as a retry instead, and the next attempt goes on with the same budget.
   */
  hardStopAt: number;
  /** progress from an earlier Temporal attempt of the same activity, if any */
  resumed: unknown;
  /** records the progress (heartbeat details); called often while waiting */
  heartbeat: (progress: InProgressProgress) => void;
  heartbeatEveryMs: number;
  /** the activity's cancellation */
  signal?: AbortSignal;
  /** after each "in progress" answer, with the delay before the next ask */
  onAnswer?: (progress: InProgressProgress, delayMs: number) => void;
}

function resumedProgress(value: unknown, transitionKey: string): InProgressProgress | undefined {
  const progress = value as Partial<InProgressProgress> | null | undefined;
  if (progress?.transitionKey !== transitionKey || typeof progress.firstAt !== 'number' || typeof progress.answers !== 'number') return undefined;
  // Progress written before `heard` existed counted "in progress" answers only.
  return { transitionKey, firstAt: progress.firstAt, answers: progress.answers, heard: progress.heard ?? true };
}

/** The delay before asking again after the n-th answer: doubling from 1 s, capped at 10 s, never below the worker's Retry-After. */
export function inProgressDelayMs(answers: number, retryAfterMs: number | null): number {
  const backoff = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** Math.min(answers - 1, 10));
  return Math.max(backoff, retryAfterMs ?? 0);
}

function sleep(ms: number, every: number, beat: () => void, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const interval = setInterval(beat, Math.max(100, every));
    const done = () => {
      clearInterval(interval);
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    const onAbort = () => {
      done();
      reject(signal!.reason);
    };
    // A timer may fire a millisecond before the wall clock says `ms` passed; the budget is
    // reckoned by the wall clock, so the wait ends only once it has (else one ask too many).
    const end = Date.now() + ms;
    const fire = () => {
      const left = end - Date.now();
      if (left > 0) {
        timer = setTimeout(fire, left);
        return;
      }
      done();
      resolve();
    };
    let timer = setTimeout(fire, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Runs `call`, and again while it answers "in progress", within the budget. Returns what
 * it returns; rethrows any other failure; throws InProgressBudgetExhaustedError when the
 * budget ran out, or the in-progress answer itself when this Temporal attempt has no room
 * left for another call.
 */
export async function deliverWhileInProgress<T>(call: () => Promise<T>, pacing: InProgressPacing): Promise<T> {
  let progress = resumedProgress(pacing.resumed, pacing.transitionKey);
  if (progress) pacing.heartbeat(progress);
  for (;;) {
    try {
      return await call();
    } catch (err) {
      if (!(err instanceof TransitionInProgressError)) throw err;
      const now = Date.now();
      progress = {
        transitionKey: pacing.transitionKey,
        firstAt: progress?.firstAt ?? now,
        answers: (progress?.answers ?? 0) + 1,
        heard: (progress?.heard ?? false) || !(err instanceof DeliveryUnconfirmedError),
      };
      const current = progress;
      pacing.heartbeat(current);
      const budgetEnd = current.firstAt + pacing.budgetMs;
      if (now >= budgetEnd) {
        throw new InProgressBudgetExhaustedError(err.protocol, err.target, {
          state: current.heard ? 'IN_PROGRESS' : 'UNCONFIRMED',
          answers: current.answers,
          firstAt: new Date(current.firstAt).toISOString(),
          lastAt: new Date(now).toISOString(),
          budgetMs: pacing.budgetMs,
          platform: err.platform,
        });
      }
      // The last ask happens at the budget's end, so the park follows a fresh answer.
      const delayMs = Math.min(inProgressDelayMs(current.answers, err.retryAfterMs), budgetEnd - now);
      if (now + delayMs + pacing.callDeadlineMs + HARD_STOP_MARGIN_MS > pacing.hardStopAt) throw err;
      pacing.onAnswer?.(current, delayMs);
      await sleep(delayMs, pacing.heartbeatEveryMs, () => pacing.heartbeat(current), pacing.signal);
    }
  }
}
