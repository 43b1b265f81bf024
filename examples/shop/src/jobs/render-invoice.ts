import { createHash } from 'node:crypto';
import { Job, type JobContext } from '@loom/core';

/** What an invoice is rendered from: plain data, as everything that crosses to a sandbox thread. */
export interface InvoiceInput {
  orderId: string;
  lines: { sku: string; quantity: number; priceCents: number }[];
}

/**
 * Renders an order's invoice: CPU-bound work (here a stand-in: the text is laid out and hashed in
 * rounds, as a PDF renderer would keep a core busy). Sandboxed, so a large invoice never stalls the
 * engine's heartbeats, and a renderer that runs out of memory fails this attempt only. The class is
 * built inside the thread by src/sandbox-container.ts, the shop's sandbox module.
 */
@Job({ name: 'render-invoice', queue: 'invoices', sandbox: { threads: 2, resourceLimits: { maxOldGenerationSizeMb: 128 } }, timeout: '1m' })
export class RenderInvoice {
  async run(input: InvoiceInput, ctx: JobContext): Promise<{ orderId: string; pages: number; sha256: string }> {
    const text = await ctx.step('layout', () =>
      [`Invoice for order ${input.orderId}`, ...input.lines.map((l) => `${l.quantity} x ${l.sku} @ ${l.priceCents}`)].join('\n'),
    );
    let digest = text;
    for (let round = 0; round < 20_000 && !ctx.signal.aborted; round++) digest = createHash('sha256').update(digest).digest('hex');
    const pages = Math.max(1, Math.ceil(input.lines.length / 40));
    ctx.log.info({ orderId: input.orderId, pages }, `invoice for ${input.orderId} rendered`);
    return { orderId: input.orderId, pages, sha256: digest };
  }
}
