import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Container } from 'inversify';
import { decoratedJobClasses, Job, JobNotRegisteredError, Loom, MemoryStore, readJobOptions } from '@loom/core';
import { CaptureLogger, FakeClock } from '@loom/testing';

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
    const done = new Set<string>();
    loom.on('job:completed', (e) => done.add(e.job.id));
    await loom.start();
    await new Promise<void>((resolve) => loom.on('job:completed', () => done.size === 2 && resolve()));
    expect([...done].sort()).toEqual([a.id, b.id].sort());
    await loom.stop();
  });

  it('restricts the engine to `jobs` when given', async () => {
    const loom = await Loom.create({ store: new MemoryStore(), jobs: [First], clock: new FakeClock(), logger: new CaptureLogger() });
    await expect(loom.enqueue(Second)).rejects.toThrow(JobNotRegisteredError);
    await expect(loom.enqueue(Second)).rejects.toThrow(/Job class Second is not registered with this Loom/);
  });
});
