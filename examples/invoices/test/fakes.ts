/** Fakes of the invoices pipeline's dependencies that count their calls and fail on request. */
import type { InvoiceDependencies, RawInvoice } from '../pipeline';

export function fakes(options: { reserveFailures?: number; renderUrl?: string } = {}) {
  const calls = { reserve: [] as string[], send: [] as string[] };
  const deps: InvoiceDependencies = {
    renderUrl: options.renderUrl ?? 'http://render.invalid/transition',
    inventory: {
      async reserve(_lines, key) {
        calls.reserve.push(key);
        if (calls.reserve.length <= (options.reserveFailures ?? 0)) throw Object.assign(new Error('inventory service unavailable'), { code: 'INVENTORY_DOWN' });
        return `res-${key.split(':')[0]}`;
      },
    },
    mailer: {
      async send(to, _pdfUrl, key) {
        calls.send.push(key);
        return `msg-${to.toLowerCase()}`;
      },
    },
  };
  return { deps, calls };
}

export const invoice: RawInvoice = {
  id: 'inv-1',
  customer: 'ACME',
  issuedAt: '2026-11-25T00:00:00.000Z',
  lines: [
    { sku: 'A-1', quantity: 2, unitPrice: 10.5 },
    { sku: 'B-2', quantity: 0, unitPrice: 3 },
  ],
};
