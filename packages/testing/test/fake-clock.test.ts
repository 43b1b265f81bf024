import { describe, expect, it } from '@jest/globals';
import { FakeClock, REFERENCE_TIME } from '@loom/testing';

describe('FakeClock', () => {
  it('starts at the reference time or the given one and only moves when told', () => {
    expect(new FakeClock().now().toISOString()).toBe(REFERENCE_TIME);
    const clock = new FakeClock('2026-03-01T12:00:00Z');
    expect(clock.now().toISOString()).toBe('2026-03-01T12:00:00.000Z');
    clock.advance('90s');
    expect(clock.now().toISOString()).toBe('2026-03-01T12:01:30.000Z');
    expect(() => new FakeClock('yesterday')).toThrow(/invalid start time/);
  });

  it('fires timers in time order, each seeing its own due time, ties in the order they were set', () => {
    const clock = new FakeClock(0);
    const fired: string[] = [];
    const at = (tag: string) => () => fired.push(`${tag}@${clock.now().getTime()}`);
    clock.setTimer(at('c'), 300);
    clock.setTimer(at('a'), 100);
    clock.setTimer(at('b1'), 200);
    clock.setTimer(at('b2'), 200);
    clock.advance(250);
    expect(fired).toEqual(['a@100', 'b1@200', 'b2@200']);
    expect(clock.now().getTime()).toBe(250);
    expect(clock.nextTimerAt()?.getTime()).toBe(300);
    clock.advance(50);
    expect(fired).toEqual(['a@100', 'b1@200', 'b2@200', 'c@300']);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('fires timers set by timers when they fall inside the same move', () => {
    const clock = new FakeClock(0);
    const fired: number[] = [];
    const tick = () => {
      fired.push(clock.now().getTime());
      if (fired.length < 5) clock.setTimer(tick, 10);
    };
    clock.setTimer(tick, 10);
    clock.advance(35);
    expect(fired).toEqual([10, 20, 30]);
    clock.advance(100);
    expect(fired).toEqual([10, 20, 30, 40, 50]);
  });

  it('cancels timers, fires 0 ms timers on set(now), and fires nothing when set backwards', () => {
    const clock = new FakeClock(1_000);
    const fired: string[] = [];
    const cancel = clock.setTimer(() => fired.push('cancelled'), 10);
    cancel();
    clock.setTimer(() => fired.push('zero'), 0);
    clock.set(1_000);
    expect(fired).toEqual(['zero']);
    clock.setTimer(() => fired.push('later'), 500);
    clock.set(0);
    expect(clock.now().getTime()).toBe(0);
    expect(fired).toEqual(['zero']);
    clock.set(1_500);
    expect(fired).toEqual(['zero', 'later']);
  });
});
