import { runPipeline } from 'pipeline-orchestrator/testing';
import { expect, it } from 'vitest';
import { greetings } from '../src/greetings.js';

it('greets a trimmed name', async () => {
  const run = await runPipeline(greetings, { name: '  Ada ' });
  expect(run.status).toBe('SUCCEEDED');
  expect(run.output).toEqual({ greeting: 'Hello, Ada!' });
});

it('fails at once, without retries, on an empty name', async () => {
  const run = await runPipeline(greetings, { name: ' ' });
  expect(run.status).toBe('FAILED');
  expect(run.terminalReason).toBe('non_retryable');
  expect(run.attempts.map((a) => [a.step, a.errorCode])).toEqual([['normalize', 'NAME_MISSING']]);
});
