import { Job, type BatchContext, type BatchItem, type JobContext, type Loom } from '@loom/core';

declare const loom: Loom;
declare const orders: { id: string }[];
declare const month: string;
declare const searchIndex: { put(docs: { id: string; text: string }[]): Promise<Array<{ ok: boolean; error?: string }>> };

@Job({ name: 'send-invoice' })
class SendInvoice {
  async run(_: { orderId: string }) {
    /* ... */
  }
}

@Job({ name: 'invoices-done' })
class InvoicesDone {
  async run(p: { month: string }, ctx: JobContext) {
    const { total, completed, dead, cancelled, failedJobIds } = ctx.batch!;
    console.log(`${p.month}: ${completed}/${total} sent, ${dead + cancelled} failed`, failedJobIds);
  }
}

const batch = await loom.batches.create({
  jobs: orders.map((o) => ({ job: SendInvoice, payload: { orderId: o.id } })),
  onComplete: { job: InvoicesDone, payload: { month } }, // once, when every job has ended
  // onSuccess / onFailure: same shape; once when all completed / when all ended and some failed
});
// batch = { id, jobIds }
await loom.batches.get(batch.id); // { id, total, completed, dead, cancelled, pending, createdAt, finishedAt? }

@Job({ name: 'index-doc', batch: { size: 100, wait: '1s' } })
class IndexDoc {
  // One entry per item, in order: a value (that job completes with it) or an Error (that job fails alone).
  async runBatch(items: BatchItem<{ id: string; text: string }>[], ctx: BatchContext) {
    const answers = await searchIndex.put(items.map((item) => item.payload));
    ctx.log.info({ items: items.length }, 'indexed');
    return answers.map((a) => (a.ok ? true : new Error(a.error)));
  }
}

await loom.enqueue(IndexDoc, { id: 'd1', text: 'hello' });

export { SendInvoice, InvoicesDone, IndexDoc };
