import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Container } from 'inversify';
import { decoratedJobClasses, Job, JobNotRegisteredError, Loom, MemoryStore, readJobOptions } from '@loom/core';
import { CaptureLogger, FakeClock } from '@loom/testing';
import { deferred } from './deferred.js';

@Job({ name: 'first', queue: 'a' })
class First {
  async run(): Promise<string> {
    return 'first';
  }
}

@Job({ name: 'second', queue: 'b', retries: 7 })
class Second {
  async run(): Promise<string> {
    return 'second';
  }
}

class Helper {}

/** `promise`, or a rejection naming what did not happen once `ms` of real time have passed. */
async function orFailAfter<T>(promise: Promise<T>, ms: number, what: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what()}`)), ms)));
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

describe('default discovery', () => {
  it('finds every @Job class loaded so far, and only those', () => {
    expect(decoratedJobClasses()).toEqual([First, Second]);
    expect(readJobOptions(Second)).toEqual({ name: 'second', queue: 'b', retries: 7 });
    expect(readJobOptions(Helper)).toBeUndefined();
  });

  it('runs all discovered jobs from all their queues when no `jobs` or `queues` are given', async () => {
    const clock = new FakeClock();
    const loom = await Loom.create({ container: new Container(), store: new MemoryStore(), clock, logger: new CaptureLogger() });
    const a = await loom.enqueue(First);
    const b = await loom.enqueue(Second);
    // Listening before start(): both jobs may complete before start() returns.
    const done = new Set<string>();
    const both = deferred();
    loom.on('job:completed', (e) => {
      done.add(e.job.id);
      if (done.size === 2) both.resolve();
    });
    await loom.start();
    // Both jobs are due now, so nothing waits on time; the deadline turns a missed job into a failure naming it, not a hang.
    await orFailAfter(both.promise, 10_000, () => `both jobs to complete (completed: ${[...done].join(', ') || 'none'})`);
    expect([...done].sort()).toEqual([a.id, b.id].sort());
    await loom.stop();
  });

  it('restricts the engine to `jobs` when given', async () => {
    const loom = await Loom.create({ store: new MemoryStore(), jobs: [First], clock: new FakeClock(), logger: new CaptureLogger() });
    await expect(loom.enqueue(Second)).rejects.toThrow(JobNotRegisteredError);
    await expect(loom.enqueue(Second)).rejects.toThrow(/Job class Second is not registered with this Loom/);
  });
});
