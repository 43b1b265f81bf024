import type { JobContext } from './job-context.js';

/** What a job class's instances look like: a `run(payload, ctx)` method. */
export interface JobHandler<P = any> {
  run(payload: P, ctx: JobContext): unknown;
}

/** A `@Job` class. `P` is the payload its `run` accepts. */
export type JobClass<P = any> = abstract new (...args: any[]) => JobHandler<P>;

/** The payload type of a job class: the first parameter of its `run`. */
export type PayloadOf<C> = C extends abstract new (...args: any[]) => { run(payload: infer P, ...rest: any[]): unknown } ? P : never;
