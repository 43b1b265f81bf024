import { describe, expect, it } from '@jest/globals';
import type { Logger } from '@loom/core';
import { LazyChildLogger } from '../src/support/lazy-child-logger.js';

function recordingLogger(entries: unknown[][], children: Record<string, unknown>[], bindings: Record<string, unknown> = {}): Logger {
  const write = (level: string) => (obj: Record<string, unknown>, msg?: string) => void entries.push([level, { ...bindings, ...obj }, msg]);
  return {
    debug: write('debug'),
    info: write('info'),
    warn: write('warn'),
    error: write('error'),
    child: (more) => {
      children.push(more);
      return recordingLogger(entries, children, { ...bindings, ...more });
    },
  };
}

describe('LazyChildLogger', () => {
  it('makes the child only on the first entry, once, and writes through it with the bindings', () => {
    const entries: unknown[][] = [];
    const children: Record<string, unknown>[] = [];
    let made = 0;
    const log = new LazyChildLogger(recordingLogger(entries, children), () => (made++, { jobId: 'j1' }));
    expect(children).toEqual([]);
    expect(made).toBe(0);
    log.warn({ a: 1 }, 'first');
    log.error({}, 'second');
    expect(children).toEqual([{ jobId: 'j1' }]);
    expect(made).toBe(1);
    expect(entries).toEqual([
      ['warn', { jobId: 'j1', a: 1 }, 'first'],
      ['error', { jobId: 'j1' }, 'second'],
    ]);
  });
});
