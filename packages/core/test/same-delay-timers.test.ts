import { describe, expect, it } from '@jest/globals';
import { FakeClock } from '@loom/testing';
import { SameDelayTimers } from '../src/support/same-delay-timers.js';

describe('SameDelayTimers', () => {
  it('fires each timer at its own due time, in order, skipping cancelled ones', () => {
    const clock = new FakeClock();
    const timers = new SameDelayTimers(clock, 1_000);
    const fired: string[] = [];
    timers.setTimer(() => fired.push('a'), 1_000);
    clock.advance(300);
    const cancelB = timers.setTimer(() => fired.push('b'), 1_000);
    clock.advance(300);
    timers.setTimer(() => fired.push('c'), 1_000);
    cancelB();
    clock.advance(399);
    expect(fired).toEqual([]);
    clock.advance(1);
    expect(fired).toEqual(['a']);
    clock.advance(599);
    expect(fired).toEqual(['a']);
    clock.advance(1);
    expect(fired).toEqual(['a', 'c']);
  });

  it('keeps no clock timer once every timer is cancelled, and serves other delays from the clock', () => {
    const clock = new FakeClock();
    const timers = new SameDelayTimers(clock, 1_000);
    const cancel = timers.setTimer(() => {}, 1_000);
    cancel();
    expect(clock.nextTimerAt()).toBeNull();
    const fired: number[] = [];
    timers.setTimer(() => fired.push(50), 50);
    clock.advance(50);
    expect(fired).toEqual([50]);
  });

  it('lets a callback set the next timer', () => {
    const clock = new FakeClock();
    const timers = new SameDelayTimers(clock, 100);
    let beats = 0;
    const beat = (): void => {
      beats++;
      timers.setTimer(beat, 100);
    };
    timers.setTimer(beat, 100);
    clock.advance(1_000);
    expect(beats).toBe(10);
  });
});
