/**
 * The `invoices` pipeline, an example of a typed pipeline with a Command step and a remote
 * REST step: validate (LOCAL) → reserve (LOCAL, Command) → render (REST worker) → send
 * (LOCAL, Command). Its dependencies come in through the factory, so its tests hand in
 * fakes and the service hands in the real ones.
 */
import { localStep, NonRetryableException, pipeline, restStep, type Operator } from 'pipeline-orchestrator';

export interface RawInvoice {
  id: string;
  customer: string;
  lines: { sku: string; quantity: number; unitPrice: number }[];
  /** ISO date: what JSON carries (a Date would arrive as a string anyway) */
  issuedAt: string;
}

export interface ValidInvoice {
  id: string;
  customer: string;
  lines: { sku: string; quantity: number; cents: number }[];
  totalCents: number;
  issuedAt: string;
}

export interface Reserved extends ValidInvoice {
  reservationId: string;
}

/** What the render worker answers. */
export interface Rendered {
  invoiceId: string;
  customer: string;
  pdfUrl: string;
}

export interface Sent {
  invoiceId: string;
  messageId: string;
}

export interface InvoiceDependencies {
  /** reserves stock; the key makes a repeated call return the first reservation */
  inventory: { reserve(lines: ValidInvoice['lines'], idempotencyKey: string): Promise<string> };
  /** sends mail; the key makes a repeated call send nothing twice */
  mailer: { send(to: string, pdfUrl: string, idempotencyKey: string): Promise<string> };
  /** the render worker's transition URL, e.g. http://render:8080/transition */
  renderUrl: string;
}

/** Checks and prices an invoice; a line without quantity is rejected alone, an invoice without lines fails. */
export const validateInvoice: Operator<RawInvoice, ValidInvoice> = (input, ctx) => {
  if (!input.lines?.length) throw new NonRetryableException(`invoice ${input.id} has no lines`, 'INVOICE_EMPTY');
  const lines = input.lines.flatMap((line) => {
    if (line.quantity > 0) return [{ sku: line.sku, quantity: line.quantity, cents: Math.round(line.unitPrice * 100) }];
    // One bad line does not fail the invoice: it goes to the Item Reject Sink (metadata only).
    ctx.reject(line, { errorCode: 'QUANTITY_NOT_POSITIVE', reason: 'a line with no quantity', key: line.sku });
    return [];
  });
  const totalCents = lines.reduce((sum, line) => sum + line.cents * line.quantity, 0);
  return { id: input.id, customer: input.customer, lines, totalCents, issuedAt: input.issuedAt };
};

export function createInvoicesPipeline(deps: InvoiceDependencies) {
  return pipeline('invoices', { version: 1 })
    .step(localStep('validate', validateInvoice))
    .step(
      localStep(
        'reserve',
        async (invoice, ctx): Promise<Reserved> => ({ ...invoice, reservationId: await deps.inventory.reserve(invoice.lines, ctx.idempotencyKey) }),
        { command: true, retry: { limit: 4, waitMs: 30_000, maxBackoffMs: 300_000, jitter: false } },
      ),
    )
    .step(restStep<Reserved, Rendered>('render', { url: deps.renderUrl }))
    .step(
      localStep(
        'send',
        async (rendered, ctx): Promise<Sent> => ({
          invoiceId: rendered.invoiceId,
          messageId: await deps.mailer.send(rendered.customer, rendered.pdfUrl, ctx.idempotencyKey),
        }),
        { command: true },
      ),
    );
}
