import { MemoryStore, type JobClass } from '@loom/core';
import { crashableStore, createTestLoom, FakeClock } from '@loom/testing';

declare const jobs: JobClass[];
const store = new MemoryStore();
const clock = new FakeClock();

const doomed = crashableStore(store);
const first = await createTestLoom({ jobs, store: doomed.store, clock });
// ... a handler calls doomed.crash() mid-run and never returns
const second = await createTestLoom({ jobs, store, clock });
await second.advance('31s'); // the dead engine's 30 s lease runs out; the survivor resumes the job

export { first };
