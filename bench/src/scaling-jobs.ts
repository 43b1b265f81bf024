import 'reflect-metadata';
import { Job, type JobClass } from '@loom/core';

/** The job names and queues of `count` queues; the scenario enqueues with the same ones. */
export function scalingJobName(i: number): { name: string; queue: string } {
  return { name: `scale-${i}`, queue: `scale-q${i}` };
}

/** `count` no-op job classes, one per queue. */
export function scalingJobClasses(count: number): JobClass[] {
  return Array.from({ length: count }, (_, i) => {
    const Noop = class {
      async run(): Promise<void> {}
    };
    Job({ ...scalingJobName(i), retries: 0 })(Noop);
    return Noop;
  });
}
