import 'reflect-metadata';
import { ConsoleLogger, Job } from '@loom/core';

/** The no-op handler every throughput run uses. */
@Job({ name: 'bench-noop', retries: 0 })
export class NoopJob {
  async run(_payload: { i: number }): Promise<void> {}
}

/** Latency runs point this at their recorder; the handler calls it the moment it starts. */
export const startProbe: { onStart: (t0: number) => void } = { onStart: () => {} };

/** Reports when it starts, so enqueue → start can be measured in-process. */
@Job({ name: 'bench-latency', retries: 0 })
export class LatencyJob {
  async run(payload: { t0: number }): Promise<void> {
    startProbe.onStart(payload.t0);
  }
}

/** Engine and store logs at warn and above: warnings and errors still show, routine chatter does not. */
export const benchLogger = new ConsoleLogger({ level: 'warn' });
