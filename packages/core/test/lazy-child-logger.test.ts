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
    const log = new LazyChildLogger(recordingLogger(entries, children), { jobId: 'j1' });
    expect(children).toEqual([]);
    log.warn({ a: 1 }, 'first');
    log.error({}, 'second');
    expect(children).toEqual([{ jobId: 'j1' }]);
    expect(entries).toEqual([
      ['warn', { jobId: 'j1', a: 1 }, 'first'],
      ['error', { jobId: 'j1' }, 'second'],
    ]);
  });
});
