import 'reflect-metadata';
import { Container } from 'inversify';
import { Job, Loom, LoomError } from '@loom/core';
import { MongoStore } from '@loom/mongo-store';

interface Invoice {
  id: string;
  lines: { sku: string; qty: number; cents: number }[];
}

@Job({ name: 'render-invoice' })
export class RenderInvoice {
  // The payload arrives whole, wherever the store kept it; a large result is kept the same way.
  async run(invoice: Invoice): Promise<{ html: string }> {
    return { html: invoice.lines.map((l) => `<tr><td>${l.sku}</td><td>${l.qty}</td><td>${l.cents}</td></tr>`).join('') };
  }
}

const store = new MongoStore({
  url: process.env.MONGODB_URI ?? 'mongodb://localhost/?replicaSet=rs0',
  database: 'app',
  offloadThreshold: 256 * 1024, // the default: larger payloads and results go to GridFS (loom_payloads.*)
  maxPayloadSize: 64 * 1024 * 1024, // the default: larger payloads are refused at enqueue
});
const loom = await Loom.create({ container: new Container(), store, jobs: [RenderInvoice] });

const invoice: Invoice = { id: 'inv-7', lines: Array.from({ length: 20_000 }, (_, i) => ({ sku: `sku-${i}`, qty: 1, cents: 990 })) };
try {
  const { id } = await loom.enqueue(RenderInvoice, invoice); // about 1 MiB: the job keeps { fileId, size }
  const job = await loom.jobs.get(id); // payload (and result) loaded; job.offloadedPayload says where and how large
  const page = await loom.jobs.list({ name: 'render-invoice' }); // no payload read: page.jobs[0].payloadSize
  console.log(job?.offloadedPayload?.size, page.jobs[0]?.payloadSize);
} catch (err) {
  // Over maxPayloadSize, or not plain data: refused with a typed error, nothing stored.
  if (LoomError.is(err, 'PAYLOAD_TOO_LARGE')) console.error(err.message);
  else throw err;
}
