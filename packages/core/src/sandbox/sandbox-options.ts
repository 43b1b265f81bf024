/**
 * `Loom.create({ sandbox })`: the engine's pool of threads for `@Job({ sandbox })` jobs.
 *
 * ```ts
 * await Loom.create({ store, sandbox: { module: new URL('./sandbox-container.js', import.meta.url), threads: 2 } });
 * ```
 */
export interface SandboxOptions {
  /**
   * The module each thread loads (a `file:` URL, or an absolute path). Its default export builds
   * the job classes' container inside the thread, since a DI container and its instances cannot
   * cross threads; the module must import (directly or not) every sandboxed `@Job` class:
   *
   * ```ts
   * export default async function createContainer(): Promise<Container> { ... }
   * // or, for another DI: a function returning (jobClass) => instance
   * ```
   */
  module: URL | string;
  /** Most threads alive at once in this engine (one run per thread at a time). @default the number of CPUs, at most `concurrency` */
  threads?: number;
}

/** The engine's sandbox after validation: threads, or every sandboxed job in-line (tests, debugging). */
export type ResolvedSandbox = { mode: 'threads'; moduleHref: string; threads: number } | { mode: 'inline' };
