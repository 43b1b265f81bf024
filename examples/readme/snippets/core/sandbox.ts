import { Job, Loom, type JobContext, type JobStore } from '@loom/core';
import { createTestLoom } from '@loom/testing';

declare const store: JobStore;
declare function renderPdf(html: string): Promise<Uint8Array>;

@Job({ name: 'render-pdf', sandbox: { threads: 2, resourceLimits: { maxOldGenerationSizeMb: 256 } }, timeout: '2m' })
class RenderPdf {
  async run(p: { orderId: string; html: string }, ctx: JobContext) {
    const pdf = await renderPdf(p.html); // seconds of CPU: the engine's event loop never notices
    await ctx.progress({ bytes: pdf.length }); // ctx works as usual: step, sleep, enqueue, progress, log, signal
    return { orderId: p.orderId, bytes: pdf.length }; // a structured clone (NOT_CLONEABLE otherwise)
  }
}

const loom = await Loom.create({
  store,
  sandbox: { module: new URL('./sandbox-container.js', import.meta.url), threads: 4 },
});

// In tests: sandboxed jobs run in-line by default (the sandbox's rules still checked) ...
const t = await createTestLoom({ jobs: [RenderPdf] });
// ... or in real threads, as in production:
const threaded = await createTestLoom({ jobs: [RenderPdf], sandbox: { module: new URL('./sandbox-container.js', import.meta.url) } });

export { loom, t, threaded };
