/** What the pricing worker computes: one place, used by the worker and by the tests' stand-in. */
import type { Priced, QuoteRequest } from './quotes.js';

export function price(request: QuoteRequest): Priced {
  return { ...request, unitCents: request.sku.startsWith('PREMIUM') ? 2500 : 1000 };
}
