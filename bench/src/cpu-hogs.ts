import { spawn, type ChildProcess } from 'node:child_process';

/** Busy processes that keep cores occupied while a scenario runs: a machine under load. */
export interface CpuHogs {
  /** How many hog processes are running. */
  readonly count: number;
  /** Kills every hog and waits for them to exit. */
  stop(): Promise<void>;
}

/**
 * Starts `count` processes that each spin one core at full speed (a `for (;;)` loop, the same load as
 * `yes > /dev/null`), at the default scheduling priority: the engine, its MongoDB and the hogs
 * compete for the CPU as an application's neighbours would on a busy host.
 */
export function startCpuHogs(count: number): CpuHogs {
  const children: ChildProcess[] = [];
  for (let i = 0; i < count; i++) {
    children.push(spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  }
  return {
    count,
    async stop() {
      await Promise.all(
        children.map(
          (child) =>
            new Promise<void>((resolve) => {
              if (child.exitCode !== null || child.signalCode !== null) return resolve();
              child.once('exit', () => resolve());
              child.kill('SIGKILL');
            }),
        ),
      );
    },
  };
}
