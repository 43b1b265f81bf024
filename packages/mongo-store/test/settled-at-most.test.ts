import { describe, expect, it } from '@jest/globals';
import { settledAtMost } from '../src/settled-at-most.js';

/** A task whose promise the test settles by hand, and whether it has started. */
function gated<T>() {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  const task = { started: false, run: () => ((task.started = true), promise), resolve, reject };
  return task;
}

/** Lets every settled promise's continuations run (no timers). */
const drain = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

describe('settledAtMost', () => {
  it('keeps at most `width` tasks in flight, starting the next as one ends', async () => {
    const tasks = Array.from({ length: 5 }, () => gated<number>());
    const all = settledAtMost(
      2,
      tasks.map((t) => t.run),
    );
    await drain();
    expect(tasks.map((t) => t.started)).toEqual([true, true, false, false, false]);
    tasks[1]!.resolve(1);
    await drain();
    expect(tasks.map((t) => t.started)).toEqual([true, true, true, false, false]);
    tasks[0]!.reject(new Error('first failed'));
    tasks[2]!.resolve(2);
    await drain();
    expect(tasks.map((t) => t.started)).toEqual([true, true, true, true, true]);
    tasks[3]!.resolve(3);
    tasks[4]!.resolve(4);
    // Every outcome, in the tasks' order, a failure among them: it does not reject or stop the rest.
    expect(await all).toEqual([
      { status: 'rejected', reason: new Error('first failed') },
      { status: 'fulfilled', value: 1 },
      { status: 'fulfilled', value: 2 },
      { status: 'fulfilled', value: 3 },
      { status: 'fulfilled', value: 4 },
    ]);
  });

  it('runs nothing for no tasks, and every task at once when the width allows', async () => {
    expect(await settledAtMost(3, [])).toEqual([]);
    const tasks = Array.from({ length: 3 }, () => gated<string>());
    const all = settledAtMost(
      8,
      tasks.map((t) => t.run),
    );
    await drain();
    expect(tasks.every((t) => t.started)).toBe(true);
    tasks.forEach((t, i) => t.resolve(`t${i}`));
    expect((await all).map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
  });
});
