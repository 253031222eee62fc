/** What the render worker does with a reserved invoice; the in-process stand-ins of the tests call it. */
import type { Rendered, Reserved } from './pipeline';

export function render(invoice: Reserved): Rendered {
  return { invoiceId: invoice.id, customer: invoice.customer, pdfUrl: `https://files.example/invoices/${invoice.id}.pdf` };
}
