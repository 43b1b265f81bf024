import type { Loom } from '@loom/core';

declare const loom: Loom;
declare const id: string; // a FulfilOrder run that charged the card, then died in a buggy `ship` step

// After deploying the fix: a new job that keeps `charge` (not made again) and runs `ship` on.
const fork = await loom.jobs.fork(id, { fromStep: 'ship' }); // { id, keptSteps: ['charge', …] }
await loom.jobs.fork(id, { fromStep: 'ship', payload: { orderId: 'o-1', address: 'corrected' } }); // with a new payload
console.log((await loom.getJob(fork.id))?.forkedFrom); // the original's id; the original is unchanged
