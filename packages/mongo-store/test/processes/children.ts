import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { dirname, resolve } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));
const register = resolve(here, 'register-ts.mjs');
export const WORKER = resolve(here, 'worker.ts');
const root = resolve(here, '../../../..');
const EMULATOR_BIN = resolve(root, 'packages/mongo-emulator/dist/bin.js');

/**
 * Brings the packages' dist/ up to date (`tsc -b`, incremental: a no-op right after `npm test`'s
 * build), since child processes load the compiled packages rather than transpiling the sources.
 */
export function buildPackages(): void {
  const projects = ['core', 'testing', 'mongo-emulator', 'mongo-store'].map((p) => `packages/${p}/tsconfig.json`);
  execFileSync(process.execPath, [resolve(root, 'node_modules/typescript/bin/tsc'), '-b', ...projects], { cwd: root, stdio: 'pipe' });
}

/** A child process running a TypeScript file, with its stdout split into lines. */
export interface Child {
  process: ChildProcess;
  lines: string[];
  /** Resolves with the first stdout line matching `pattern` (also one already printed). */
  waitForLine(pattern: RegExp, ms: number): Promise<string>;
  /** Resolves with the exit signal (or code) once the process has exited. */
  exited: Promise<NodeJS.Signals | number | null>;
  /** SIGKILL, SIGTERM...; resolves once it exited. */
  kill(signal: NodeJS.Signals): Promise<NodeJS.Signals | number | null>;
}

export function spawnTs(script: string, args: string[] = [], env: Record<string, string> = {}): Child {
  const loader = script.endsWith('.ts') ? ['--import', register] : [];
  const proc = spawn(process.execPath, [...loader, script, ...args], {
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const waiters = new Set<() => void>();
  createInterface({ input: proc.stdout! }).on('line', (line) => {
    lines.push(line);
    for (const wake of waiters) wake();
  });
  let stderr = '';
  proc.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const exited = new Promise<NodeJS.Signals | number | null>((done) => proc.once('exit', (code, signal) => done(signal ?? code)));
  const child: Child = {
    process: proc,
    lines,
    exited,
    waitForLine(pattern, ms) {
      return new Promise((resolveLine, reject) => {
        const check = () => {
          const line = lines.find((l) => pattern.test(l));
          if (line !== undefined) finish(() => resolveLine(line));
        };
        const timer = setTimeout(() => finish(() => reject(new Error(`no line matching ${pattern} within ${ms} ms; stderr: ${stderr}`))), ms);
        const onExit = () => finish(() => reject(new Error(`process exited before printing ${pattern}; stderr: ${stderr}`)));
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
    async kill(signal) {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
  };
  return child;
}

/** The emulator run by its bin in a child process, as CI runs it. */
export async function startEmulatorProcess(ms: number): Promise<{ uri: string; child: Child }> {
  const child = spawnTs(EMULATOR_BIN, ['--port', '0']);
  const uri = await child.waitForLine(/^mongodb:\/\//, ms);
  return { uri, child };
}
