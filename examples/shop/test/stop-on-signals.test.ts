import { describe, expect, it } from '@jest/globals';
import { CaptureLogger } from '@loom/testing';
import { stopOnSignals } from '../src/infra/stop-on-signals.js';

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (err: Error) => void } {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('stopOnSignals', () => {
  it('runs the graceful stop once on SIGTERM and exits 0 only after it finished', async () => {
    const stopped = deferred();
    const calls: string[] = [];
    const exits: number[] = [];
    const exited = deferred();
    const off = stopOnSignals(
      (signal) => {
        calls.push(signal);
        return stopped.promise;
      },
      new CaptureLogger(),
      (code) => {
        exits.push(code);
        exited.resolve();
      },
    );
    try {
      process.emit('SIGTERM');
      expect(calls).toEqual(['SIGTERM']);
      expect(exits).toEqual([]);
      stopped.resolve();
      await exited.promise;
      expect(exits).toEqual([0]);
    } finally {
      off();
    }
  });

  it('exits 130 at once on a second Ctrl-C, saying jobs are not lost', () => {
    const logs = new CaptureLogger();
    const exits: number[] = [];
    const off = stopOnSignals(
      () => new Promise(() => {}),
      logs,
      (code) => exits.push(code),
    );
    try {
      process.emit('SIGINT');
      process.emit('SIGINT');
      expect(exits).toEqual([130]);
      expect(logs.at('warn')[0]?.msg).toBe('SIGINT again: exiting now; jobs still running are not lost, they run again once their lease expires');
    } finally {
      off();
    }
  });

  it('exits 1 and logs the error when the stop fails', async () => {
    const logs = new CaptureLogger();
    const exited = deferred();
    const exits: number[] = [];
    const off = stopOnSignals(
      () => Promise.reject(new Error('store unreachable')),
      logs,
      (code) => {
        exits.push(code);
        exited.resolve();
      },
    );
    try {
      process.emit('SIGINT');
      await exited.promise;
      expect(exits).toEqual([1]);
      expect(logs.at('error')[0]).toMatchObject({ msg: 'graceful stop failed', fields: { err: expect.objectContaining({ message: 'store unreachable' }) } });
    } finally {
      off();
    }
  });
});
