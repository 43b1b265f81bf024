/** A fake process for runCli: captured stdout/stderr and a signal emitter tests fire. */
import { EventEmitter } from 'node:events';

export function fakeIo() {
  const out: string[] = [];
  const err: string[] = [];
  const signals = new EventEmitter();
  return { out, err, signals, io: { stdout: (s: string) => out.push(s), stderr: (s: string) => err.push(s), signals } };
}
