import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { createInterface } from 'node:readline';

/**
 * A Node child process, by default started with this process's own `execArgv`. The tests run
 * compiled scripts with plain `node` (`execArgv` []), as the multi-process tests
 * (packages/mongo-store/test/processes/children.ts) and the reliability tests do.
 */
export interface NodeProcess {
  readonly process: ChildProcess;
  /** Resolves with the first stdout line matching `pattern` (also one already printed). */
  waitForLine(pattern: RegExp, ms: number): Promise<string>;
  /** Resolves with the exit signal (or code) once the process has exited. */
  readonly exited: Promise<NodeJS.Signals | number | null>;
  readonly alive: boolean;
  /** The last 4,000 characters of its stderr. */
  stderr(): string;
  /** Its stdout lines so far. */
  lines(): string[];
  /** Sends `signal` (if it still runs) and resolves once it exited. */
  kill(signal: NodeJS.Signals): Promise<NodeJS.Signals | number | null>;
}

/**
 * `execArgv`: node's own flags for the child; by default this process's. `stderrFile`: also keep
 * its whole stderr there (a run's post-mortem reads what every worker logged).
 */
export function spawnNode(script: string, args: string[], env: Record<string, string>, execArgv = process.execArgv, stderrFile?: string): NodeProcess {
  const proc = spawn(process.execPath, [...execArgv, script, ...args], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  if (stderrFile !== undefined) proc.stderr!.pipe(createWriteStream(stderrFile, { flags: 'a' }));
  const lines: string[] = [];
  const waiters = new Set<() => void>();
  createInterface({ input: proc.stdout! }).on('line', (line) => {
    lines.push(line);
    for (const wake of waiters) wake();
  });
  let stderr = '';
  proc.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  let alive = true;
  const exited = new Promise<NodeJS.Signals | number | null>((done) =>
    proc.once('exit', (code, signal) => {
      alive = false;
      done(signal ?? code);
    }),
  );
  return {
    process: proc,
    exited,
    get alive() {
      return alive;
    },
    stderr: () => stderr,
    lines: () => [...lines],
    kill(signal) {
      if (alive) proc.kill(signal);
      return exited;
    },
    waitForLine(pattern, ms) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const line = lines.find((l) => pattern.test(l));
          if (line !== undefined) finish(() => resolve(line));
        };
        const timer = setTimeout(() => finish(() => reject(new Error(`${script}: no line matching ${pattern} within ${ms} ms; stderr: ${stderr}`))), ms);
        const onExit = () => finish(() => reject(new Error(`${script} exited before printing ${pattern}; stderr: ${stderr}`)));
        const finish = (settle: () => void) => {
          clearTimeout(timer);
          waiters.delete(check);
          proc.off('exit', onExit);
          settle();
        };
        waiters.add(check);
        proc.once('exit', onExit);
        check();
      });
    },
  };
}
