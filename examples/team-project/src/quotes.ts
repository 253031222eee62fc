/**
 * `quotes`: a local step, then a REST step served by the team's pricing worker (a remote
 * transition worker, e.g. one built with `@pipeline-orchestrator/worker-kit`), then a local total.
 */
import { localStep, pipeline, restStep } from 'pipeline-orchestrator';

export interface QuoteRequest {
  sku: string;
  quantity: number;
}

/** What the pricing worker answers for a request. */
export interface Priced {
  sku: string;
  quantity: number;
  unitCents: number;
}

export function createQuotesPipeline(pricingUrl: string) {
  return pipeline('quotes', { version: 1 })
    .step(localStep('check', (request: QuoteRequest) => ({ sku: request.sku.toUpperCase(), quantity: Math.max(1, Math.floor(request.quantity)) })))
    .step(restStep<QuoteRequest, Priced>('price', { url: pricingUrl }, { retry: { limit: 3, waitMs: 1000, jitter: false } }))
    .step(localStep('total', (priced: Priced) => ({ sku: priced.sku, totalCents: priced.unitCents * priced.quantity })));
}
