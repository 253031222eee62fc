/** Pipelines the benchmarks run through the engine. */
import { definePipeline, localStep } from '../src/pipeline/define';

const noop = (name: string, command = false) => localStep(name, (input: unknown) => input, { command });
const many = (count: number, command = false) => Array.from({ length: count }, (_, i) => noop(`s${i}`, command));

export const benchPipelines = [
  definePipeline({ name: 'noop1', steps: many(1) }),
  definePipeline({ name: 'noop5', steps: many(5) }),
  // Figure 1f: the same steps on the fast path (local activities), and three-step pipelines for its latency.
  definePipeline({ name: 'noop1fast', fastPath: true, steps: many(1) }),
  definePipeline({ name: 'noop5fast', fastPath: true, steps: many(5) }),
  definePipeline({ name: 'noop3', steps: many(3) }),
  definePipeline({ name: 'noop3fast', fastPath: true, steps: many(3) }),
  definePipeline({ name: 'cmd5fast', fastPath: true, steps: many(5, true) }),
  definePipeline({ name: 'cmd1', steps: many(1, true) }),
  definePipeline({ name: 'cmd5', steps: many(5, true) }),
  definePipeline({
    name: 'retry1',
    retry: { limit: 5, waitMs: 10, maxBackoffMs: 50, jitter: false },
    steps: [
      localStep('flaky', (input: { failTimes: number }, ctx) => {
        if (ctx.attempt <= input.failTimes) throw new Error('flaky');
        return input;
      }),
    ],
  }),
  // Memory: executions parked in retry backoff (a 10-minute wait), and executions running a long step.
  definePipeline({
    name: 'park',
    retry: { limit: 5, waitMs: 600_000, maxBackoffMs: 600_000, jitter: false },
    steps: [
      localStep('down', () => {
        throw new Error('dependency down');
      }),
    ],
  }),
  definePipeline({
    name: 'sleepy',
    steps: [
      localStep(
        'sleep',
        (_input: unknown, ctx) =>
          new Promise((resolve) => {
            const timer = setTimeout(resolve, 600_000);
            ctx.signal.addEventListener(
              'abort',
              () => {
                clearTimeout(timer);
                resolve(null);
              },
              { once: true },
            );
          }),
        { timeoutMs: 900_000 },
      ),
    ],
  }),
];
