import { z } from 'zod';
import { Job, RateLimitedError, type JobContext } from '@loom/core';

const Sms = z.object({ tenantId: z.string(), to: z.string(), text: z.string() });

// At most 10 starts per second and 5 running at once per tenant, across every instance sharing the
// store; tenants take turns. A held job stays queued and burns no attempt.
@Job({
  payload: Sms,
  rateLimit: { limit: 10, per: '1s', key: (p) => p.tenantId },
  group: { key: (p) => p.tenantId, concurrency: 5 },
})
export class SendSms {
  async run(sms: z.infer<typeof Sms>, ctx: JobContext): Promise<void> {
    const res = await fetch('https://sms.example/send', { method: 'POST', body: JSON.stringify(sms), signal: ctx.signal });
    // The provider says slow down: this tenant's jobs pause everywhere for the time it asks.
    if (res.status === 429) throw new RateLimitedError(`${Number(res.headers.get('retry-after') ?? 30)}s`);
  }
}

// Five saves of a document within five seconds: one reindex, with the last payload.
@Job({ debounce: { key: (p: { docId: string; version: number }) => `reindex:${p.docId}`, delay: '5s' }, globalConcurrency: 2 })
export class Reindex {
  async run(doc: { docId: string; version: number }, ctx: JobContext): Promise<void> {
    ctx.log.info({ docId: doc.docId, version: doc.version }, 'reindexed');
  }
}
