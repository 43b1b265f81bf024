import { describe, expect, it } from '@jest/globals';
import { LazyAbort, ShutdownSignal } from '../src/support/lazy-abort.js';

describe('LazyAbort', () => {
  it('gives a signal made after the abort the first reason, like an eager AbortController', () => {
    const abort = new LazyAbort();
    abort.abort(new Error('first'));
    abort.abort(new Error('second'));
    expect(abort.signal.aborted).toBe(true);
    expect((abort.signal.reason as Error).message).toBe('first');
  });

  it('aborts a signal already handed out', () => {
    const abort = new LazyAbort();
    const { signal } = abort;
    const seen: unknown[] = [];
    signal.addEventListener('abort', () => seen.push(signal.reason));
    abort.abort('timeout');
    expect(seen).toEqual(['timeout']);
  });
});

describe('ShutdownSignal', () => {
  it('calls the callbacks still registered, once, and a late one at once', () => {
    const shutdown = new ShutdownSignal();
    const calls: string[] = [];
    shutdown.onAbort(() => calls.push('a'));
    const unregisterB = shutdown.onAbort(() => calls.push('b'));
    shutdown.onAbort(() => calls.push('c'));
    unregisterB();
    unregisterB();
    shutdown.abort();
    shutdown.abort();
    shutdown.onAbort(() => calls.push('late'));
    expect(calls.sort()).toEqual(['a', 'c', 'late']);
    expect(shutdown.aborted).toBe(true);
  });
});
