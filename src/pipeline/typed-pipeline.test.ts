/**
 * Typed pipelines: the compiler checks each step's input against the previous step's output
 * (`// @ts-expect-error` lines fail `tsc`, and so `npm test`, the day they compile), outputs
 * are what JSON carries, and a definition refuses values it cannot run with, naming the step
 * and the field.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  definePipeline,
  functionStep,
  grpcStep,
  localStep,
  pipeline,
  restStep,
  type DateArrivesAsString,
  type JsonSafe,
  type PipelineInput,
  type PipelineOutput,
  type StepContext,
  type StepDefinition,
} from './define';

interface RawInvoice {
  id: string;
  amount: number;
  issuedAt: string;
}
interface ValidInvoice {
  id: string;
  cents: number;
}
interface Shipment {
  tracking: string;
}

const validate = (input: RawInvoice): ValidInvoice => ({ id: input.id, cents: Math.round(input.amount * 100) });

describe('a typed pipeline', () => {
  it("takes its first step's input and gives its last step's output, each step's input typed from the step before", () => {
    const invoices = pipeline('invoices', { version: 1 })
      .step(localStep('validate', validate))
      .step(
        localStep('reserve', (input, ctx) => {
          // The input is typed from the step before without an annotation.
          expectTypeOf(input).toEqualTypeOf<ValidInvoice>();
          expectTypeOf(ctx).toEqualTypeOf<StepContext>();
          return { ...input, reservation: ctx.idempotencyKey };
        }),
      )
      .step(restStep<ValidInvoice, { pdfUrl: string }>('render', { url: 'http://127.0.0.1:1/render' }))
      .step(functionStep('send', async (event) => ({ sent: event.pdfUrl.length > 0 })));
    expectTypeOf<PipelineInput<typeof invoices>>().toEqualTypeOf<RawInvoice>();
    expectTypeOf<PipelineOutput<typeof invoices>>().toEqualTypeOf<{ sent: boolean }>();
    expect(invoices).toMatchObject({ name: 'invoices', version: 1, fingerprint: expect.stringMatching(/^[0-9a-f]{16}$/) });
    expect(invoices.steps.map((step) => `${step.name}:${step.transport}`)).toEqual(['validate:LOCAL', 'reserve:LOCAL', 'render:REST', 'send:FUNCTION']);
  });

  it('does not compile a step whose input type does not accept the previous output', () => {
    const start = pipeline('mismatch').step(localStep('validate', validate));
    // @ts-expect-error ValidInvoice is not a Shipment
    start.step(localStep('ship', (input: Shipment) => input.tracking));
    // @ts-expect-error a REST step declared to take a Shipment
    start.step(restStep<Shipment, Shipment>('ship', { url: 'http://127.0.0.1:1/ship' }));
    // @ts-expect-error a step that only accepts a narrower input
    start.step(localStep('narrow', (input: ValidInvoice & { extra: string }) => input.extra));
    // A step that takes less than it is given compiles.
    start.step(localStep('wide', (input: { id: string }) => input.id));
  });

  it('does not compile an output JSON cannot carry, and takes its string instead', () => {
    // @ts-expect-error a Date would reach the next step as a string
    localStep('dated', () => ({ at: new Date() }));
    // @ts-expect-error nested too
    localStep('nested', () => ({ lines: [{ at: new Date() }] }));
    // @ts-expect-error a Map becomes {}
    localStep('mapped', () => new Map<string, number>());
    // @ts-expect-error a bigint cannot be serialised at all
    functionStep('big', () => ({ n: 1n }));
    // @ts-expect-error a remote step's declared output is held to the same rule
    restStep<ValidInvoice, { at: Date }>('remote', { url: 'http://127.0.0.1:1/x' });
    const dated = localStep('dated', () => ({ at: new Date().toISOString(), maybe: undefined as string | undefined, list: [1, null] }));
    expectTypeOf(dated).toEqualTypeOf<StepDefinition<any, { at: string; maybe: string | undefined; list: (number | null)[] }, 'dated'>>();
  });

  it('types a remote step without type arguments as unknown, never any: the step after it must check what it got', () => {
    const untyped = restStep('render', { url: 'http://127.0.0.1:1/render' });
    expectTypeOf(untyped).toEqualTypeOf<StepDefinition<unknown, unknown, 'render'>>();
    expectTypeOf(grpcStep('g', { address: '127.0.0.1:1' })).toEqualTypeOf<StepDefinition<unknown, unknown, 'g'>>();
    const after = pipeline('untyped-remote').step(localStep('validate', validate)).step(untyped);
    // @ts-expect-error the remote step's output is unknown: a step that assumes a shape does not compile
    after.step(localStep('use', (rendered: { pdfUrl: string }) => rendered.pdfUrl));
    // A step that takes unknown (and checks it) compiles.
    after.step(localStep('check', (rendered: unknown) => typeof rendered === 'object'));
  });

  it("names the step in the compiler's first line at a mismatch, and says a Date arrives as its ISO string", () => {
    // The parameter type carries the step's name: 'StepDefinition<Shipment, string, "ship">' is not assignable to 'StepDefinition<ValidInvoice, string, "ship">'.
    expectTypeOf(localStep('ship', (input: Shipment) => input.tracking)).toEqualTypeOf<StepDefinition<Shipment, string, 'ship'>>();
    expectTypeOf<JsonSafe<{ at: Date }>>().toEqualTypeOf<{ at: DateArrivesAsString }>();
  });

  it('keeps the untyped form working', () => {
    const old = definePipeline({ name: 'old', steps: [localStep('a', (input) => input), localStep('b', () => null)] });
    expect(old.steps).toHaveLength(2);
  });

  it('leaves the shorter pipeline as it was when a step is appended', () => {
    const one = pipeline('grow').step(localStep('a', () => 1));
    const two = one.step(localStep('b', (n) => n + 1));
    expect([one.steps.length, two.steps.length]).toEqual([1, 2]);
    expect(one.fingerprint).not.toBe(two.fingerprint);
  });
});

describe('a definition refuses values it cannot run with, naming the step and the field', () => {
  const op = () => null;
  it.each([
    ['an operator that is not a function', () => localStep('a', undefined as never), /step "a": run must be a function/],
    ['a FUNCTION handler that is not a function', () => functionStep('f', null as never), /step "f": handler must be a function/],
    ['a negative retry limit', () => localStep('a', op, { retry: { limit: -1 } }), /step "a": retry.limit -1 must be an integer/],
    ['a fractional retry limit', () => localStep('a', op, { retry: { limit: 1.5 } }), /step "a": retry.limit 1.5/],
    ['a zero timeout', () => localStep('a', op, { timeoutMs: 0 }), /step "a": timeoutMs 0 must be a positive integer/],
    ['a NaN wait', () => localStep('a', op, { retry: { waitMs: NaN } }), /step "a": retry.waitMs NaN/],
    ['an infinite backoff cap', () => localStep('a', op, { retry: { maxBackoffMs: Infinity } }), /step "a": retry.maxBackoffMs Infinity/],
    ['an ftp URL', () => restStep('r', { url: 'ftp://example.com/x' }), /step "r": rest.url must be http or https, not ftp:/],
    ['a URL that is not one', () => restStep('r', { url: 'not a url' }), /step "r": rest.url "not a url" is not a URL/],
    [
      'a dispositionUrl without a placeholder',
      () => restStep('r', { url: 'http://w/t', dispositionUrl: 'http://w/t/lookup' }),
      /step "r": rest.dispositionUrl must contain \{idempotencyKey\}/,
    ],
    ['a gRPC address without a port', () => grpcStep('g', { address: 'worker' }), /step "g": grpc.address "worker" must be host:port/],
    ['an error type list that is not one', () => localStep('a', op, { nonRetryableErrorTypes: 'TypeError' as never }), /step "a": nonRetryableErrorTypes/],
    ['a bad step name', () => localStep('a b', op), /step name "a b" must match/],
    ['a pipeline retry limit of -1', () => pipeline('p', { retry: { limit: -1 } }).step(localStep('a', op)), /pipeline "p": retry.limit -1/],
    ['a missing step', () => definePipeline({ name: 'p', steps: [undefined as never] }), /pipeline "p": a step is undefined/],
  ])('%s', (_what, declare, message) => {
    expect(declare).toThrow(message);
  });

  it('takes a dispositionUrl with its placeholder, and a zero retry limit', () => {
    expect(restStep('r', { url: 'https://w/t', dispositionUrl: 'https://w/t/{idempotencyKey}' }).transport).toBe('REST');
    expect(localStep('a', op, { retry: { limit: 0, waitMs: 0 } }).retry).toEqual({ limit: 0, waitMs: 0 });
  });
});
