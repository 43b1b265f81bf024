import { MAX_TIMER_MS, toMs, type Duration } from '../support/duration.js';

/**
 * Retry delays. Pure functions of the attempt number; randomness (jitter) comes from an injected
 * source so tests can pin it. Every result is a finite integer in `[0, min(max, 2^31 - 1)]` ms,
 * however large the attempt number.
 */

/** How the delay grows with the attempt number. */
export type BackoffType = 'fixed' | 'linear' | 'exponential';

/** How the delay is randomised: `full` picks in `[0, d]`, `equal` in `[d/2, d]`. */
export type BackoffJitter = 'none' | 'full' | 'equal';

/** A built-in strategy with durations already in milliseconds. */
export interface BackoffStrategy {
  type: BackoffType;
  delayMs: number;
  /** Upper bound of any delay; never above {@link MAX_TIMER_MS}. */
  maxMs: number;
  jitter: BackoffJitter;
}

/** A custom strategy: the delay before the retry that follows failed attempt `attempt`. */
export type BackoffFunction = (attempt: number, error: Error) => Duration;

/** Returns a number in `[0, 1)`. Default `Math.random`. */
export type RandomSource = () => number;

/** The strategy used when `@Job` gives no `backoff`. */
export const DEFAULT_BACKOFF: BackoffStrategy = { type: 'exponential', delayMs: 1_000, maxMs: 3_600_000, jitter: 'full' };

const clamp = (value: number, max: number): number => Math.min(Math.max(value, 0), max);

/** The undelayed, unjittered delay after failed attempt `attempt` (1-based), capped at the strategy's max. */
export function baseDelay(strategy: BackoffStrategy, attempt: number): number {
  const cap = clamp(strategy.maxMs, MAX_TIMER_MS);
  const n = Number.isFinite(attempt) ? Math.max(1, Math.floor(attempt)) : Number.MAX_SAFE_INTEGER;
  if (strategy.delayMs <= 0) return 0;
  switch (strategy.type) {
    case 'fixed':
      return Math.min(strategy.delayMs, cap);
    case 'linear':
      return Math.min(strategy.delayMs * n, cap);
    case 'exponential':
      // 2^(n-1) overflows to Infinity long before n = 10^6; the cap wins well before that.
      return n > 64 ? cap : Math.min(strategy.delayMs * 2 ** (n - 1), cap);
  }
}

/** The delay in ms after failed attempt `attempt`, with jitter applied. */
export function backoffDelay(strategy: BackoffStrategy, attempt: number, random: RandomSource = Math.random): number {
  const base = baseDelay(strategy, attempt);
  const r = clamp(Number(random()) || 0, 1);
  switch (strategy.jitter) {
    case 'none':
      return Math.round(base);
    case 'full':
      return Math.round(base * r);
    case 'equal':
      return Math.round(base / 2 + (base / 2) * r);
  }
}

/**
 * Runs a custom {@link BackoffFunction} and checks what it returns. Throws a `TypeError` naming
 * the bad value; the caller falls back to {@link DEFAULT_BACKOFF} and logs it.
 */
export function customBackoffDelay(fn: BackoffFunction, attempt: number, error: Error): number {
  const value = fn(attempt, error);
  return clamp(Math.round(toMs(value)), MAX_TIMER_MS);
}
