/**
 * Whether any worker polls a task queue, as Temporal last saw it (DescribeTaskQueue, workflow
 * tasks). A bulk job's view uses it to say why the job stands still when no worker serves its
 * own queue or the queue its re-driven runs wait on (`heldBack`).
 *
 * A read never waits on Temporal for long: the read that asks waits at most `waitMs`, else its
 * answer is "unknown" (null) and the call goes on in the background (within the call deadline)
 * so a later read has it; reads while a call is out get the last answer without waiting. Answers are kept for `ttlMs` per queue. Temporal lists a worker that
 * stopped polling for a few minutes more, so "no pollers" is only ever said of a queue that
 * no worker has served for that long, never of one whose worker just restarted.
 */
import type { Client } from '@temporalio/client';
// A default import: @temporalio/proto is CommonJS whose names Node's ESM loader cannot see (tsx, npm start).
import proto from '@temporalio/proto';
import { withCallDeadline } from './call-deadline';

const { temporal } = proto;

interface Seen {
  at: number;
  polled: boolean | null;
  call?: Promise<boolean | null>;
}

export class TaskQueuePollers {
  private readonly seen = new Map<string, Seen>();
  /** calls still out: the service waits for them before it closes its Temporal connection */
  private readonly out = new Set<Promise<unknown>>();

  constructor(
    private readonly client: Client,
    /** the whole call's deadline (pipeline.temporal.call-timeout) */
    private readonly callTimeoutMs: number,
    /** how long a read waits for an answer it does not have yet */
    private readonly waitMs = 300,
    private readonly ttlMs = 10_000,
  ) {}

  /** true: a worker polls it; false: none does; null: Temporal did not say in time. */
  async polled(taskQueue: string): Promise<boolean | null> {
    const seen = this.seen.get(taskQueue);
    if (seen && (seen.call || Date.now() - seen.at < this.ttlMs)) return seen.polled;
    const call = this.ask(taskQueue);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), this.waitMs);
    });
    try {
      return await Promise.race([call, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  private ask(taskQueue: string): Promise<boolean | null> {
    const entry: Seen = this.seen.get(taskQueue) ?? { at: 0, polled: null };
    const call = withCallDeadline(this.client, this.callTimeoutMs, () =>
      this.client.workflowService.describeTaskQueue({
        namespace: this.client.options.namespace,
        taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      }),
    ).then(
      (answer) => (answer.pollers ?? []).length > 0,
      () => null,
    );
    entry.call = call;
    this.seen.set(taskQueue, entry);
    const settled = call.then((polled) => {
      this.seen.set(taskQueue, { at: Date.now(), polled });
      this.out.delete(settled);
    });
    this.out.add(settled);
    return call;
  }

  /**
   * Resolves once no call is out (each ends by its deadline). The service awaits it before it
   * closes its Temporal connection: a call that outlived its read must not be retried by the SDK
   * on a closed channel ("Channel has been shut down", thrown from a timer).
   */
  async settled(): Promise<void> {
    while (this.out.size > 0) await Promise.allSettled([...this.out]);
  }
}
