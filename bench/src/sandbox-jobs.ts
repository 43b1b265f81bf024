import 'reflect-metadata';
import { Job } from '@loom/core';

// The jobs of the sandbox scenario (scenarios/sandbox.ts). Its threads load them compiled, through
// sandbox-container.ts; the engine's side gets the same classes from this module.

/** Keeps a core busy for `ms` of wall time (a stand-in for a resize, a PDF, a big transform). */
function burn(ms: number): number {
  const end = performance.now() + ms;
  let x = 0;
  while (performance.now() < end) for (let i = 0; i < 10_000; i++) x = (x * 31 + i) % 1_000_003;
  return x;
}

@Job({ name: 'bench-burn-sandboxed', sandbox: true, retries: 0 })
export class BurnSandboxed {
  async run(payload: { ms: number }): Promise<number> {
    return burn(payload.ms);
  }
}

@Job({ name: 'bench-burn-in-thread', retries: 0 })
export class BurnInThread {
  async run(payload: { ms: number }): Promise<number> {
    return burn(payload.ms);
  }
}

@Job({ name: 'bench-noop-sandboxed', sandbox: true, retries: 0 })
export class NoopSandboxed {
  async run(_payload: { i: number }): Promise<void> {}
}

@Job({ name: 'bench-noop-in-thread', retries: 0 })
export class NoopInThread {
  async run(_payload: { i: number }): Promise<void> {}
}
