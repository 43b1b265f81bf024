import { describe, expect, it } from '@jest/globals';
import { backoffDelay, baseDelay, customBackoffDelay, MAX_TIMER_MS, type BackoffStrategy } from '@loom/core';

const strategies: BackoffStrategy[] = [
  { type: 'fixed', delayMs: 2_000, maxMs: 3_600_000, jitter: 'none' },
  { type: 'linear', delayMs: 2_000, maxMs: 3_600_000, jitter: 'none' },
  { type: 'exponential', delayMs: 2_000, maxMs: 3_600_000, jitter: 'none' },
  { type: 'exponential', delayMs: 1, maxMs: MAX_TIMER_MS, jitter: 'full' },
  { type: 'linear', delayMs: 1_000_000, maxMs: MAX_TIMER_MS, jitter: 'equal' },
];

describe('backoff', () => {
  it('grows as documented for the first attempts', () => {
    const at = (s: BackoffStrategy) => [1, 2, 3, 4].map((n) => backoffDelay(s, n));
    expect(at(strategies[0]!)).toEqual([2_000, 2_000, 2_000, 2_000]);
    expect(at(strategies[1]!)).toEqual([2_000, 4_000, 6_000, 8_000]);
    expect(at(strategies[2]!)).toEqual([2_000, 4_000, 8_000, 16_000]);
  });

  it('caps at max', () => {
    expect(backoffDelay(strategies[2]!, 12)).toBe(3_600_000);
    expect(backoffDelay(strategies[1]!, 5_000)).toBe(3_600_000);
  });

  it.each(strategies.map((s) => [`${s.type}/${s.jitter}`, s] as const))(
    'stays finite, integral and within max and 2^31-1 ms for attempts 1..10^6 (%s)',
    (_label, strategy) => {
      const randoms = [0, 0.5, 0.999999];
      let previousBase = 0;
      for (let attempt = 1; attempt <= 1_000_000; attempt += attempt < 200 ? 1 : 997) {
        const base = baseDelay(strategy, attempt);
        expect(base).toBeGreaterThanOrEqual(previousBase);
        previousBase = base;
        for (const r of randoms) {
          const d = backoffDelay(strategy, attempt, () => r);
          if (!Number.isInteger(d) || d < 0 || d > strategy.maxMs || d > MAX_TIMER_MS) {
            throw new Error(`attempt ${attempt}, random ${r}: delay ${d} out of range`);
          }
        }
      }
      expect(backoffDelay(strategy, 1_000_000, () => 0.999999)).toBeLessThanOrEqual(MAX_TIMER_MS);
    },
  );

  it('applies jitter from the injected random source', () => {
    const s: BackoffStrategy = { type: 'fixed', delayMs: 1_000, maxMs: 10_000, jitter: 'full' };
    expect(backoffDelay(s, 1, () => 0)).toBe(0);
    expect(backoffDelay(s, 1, () => 0.25)).toBe(250);
    expect(backoffDelay({ ...s, jitter: 'equal' }, 1, () => 0)).toBe(500);
    expect(backoffDelay({ ...s, jitter: 'equal' }, 1, () => 0.5)).toBe(750);
  });

  it('survives a broken random source and absurd attempt numbers', () => {
    const s: BackoffStrategy = { type: 'exponential', delayMs: 1_000, maxMs: 60_000, jitter: 'full' };
    expect(backoffDelay(s, 3, () => NaN)).toBe(0);
    expect(backoffDelay(s, 3, () => 7)).toBe(4_000);
    expect(backoffDelay(s, Infinity, () => 1)).toBe(60_000);
    expect(backoffDelay(s, -5, () => 1)).toBe(1_000);
  });

  it('checks what a custom backoff function returns', () => {
    expect(customBackoffDelay((n) => `${n}s`, 3, new Error('x'))).toBe(3_000);
    expect(customBackoffDelay(() => 1e15, 3, new Error('x'))).toBe(MAX_TIMER_MS);
    expect(() => customBackoffDelay(() => 'soon', 3, new Error('x'))).toThrow(/Invalid duration "soon"/);
  });
});
