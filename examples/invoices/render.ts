/** What the render worker (examples/python-worker) does with a reserved invoice: the in-memory tests' stand-in for it. */
import type { Rendered, Reserved } from './pipeline';

export function render(invoice: Reserved): Rendered {
  return { invoiceId: invoice.id, customer: invoice.customer, pdfUrl: `https://files.example/invoices/${invoice.id}.pdf` };
}
