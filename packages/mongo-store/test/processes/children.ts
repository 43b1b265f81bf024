import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join, resolve } from 'node:path';
import { spawnNode, type NodeProcess } from '../../../../chaos/src/node-process.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../../../..');
const TSC = resolve(root, 'node_modules/typescript/bin/tsc');
/** The multi-process worker, compiled (see tsconfig.json here): a child starts in seconds, also on a loaded machine. */
export const WORKER = resolve(here, 'dist/worker.js');
/** The instrumented process of the cross-process tracing test (traced.ts, compiled). */
export const TRACED = resolve(here, 'dist/traced.js');
const EMULATOR_BIN = resolve(root, 'packages/mongo-emulator/dist/bin.js');

const BUILD_LOCK = resolve(root, 'node_modules/.cache/loom-test-build.lock');
/** A lock older than this was left by a killed run: taken over. */
const STALE_LOCK_MS = 5 * 60_000;

/**
 * Runs `build` while holding a lock shared by all processes of this checkout: jest runs test
 * files in parallel workers, and two files building the same outputs at once could let one file's
 * child process load a script the other file is halfway through writing.
 */
function underBuildLock(build: () => void): void {
  mkdirSync(dirname(BUILD_LOCK), { recursive: true });
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      mkdirSync(BUILD_LOCK);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const since = statSync(BUILD_LOCK, { throwIfNoEntry: false })?.mtimeMs;
      if (since !== undefined && Date.now() - since > STALE_LOCK_MS) rmSync(BUILD_LOCK, { recursive: true, force: true });
      // Another build is under way: wait for it synchronously, as the builds themselves are.
      else Atomics.wait(pause, 0, 0, 100);
    }
  }
  try {
    build();
  } finally {
    rmSync(BUILD_LOCK, { recursive: true, force: true });
  }
}

/**
 * Brings the packages' dist/ up to date (`tsc -b`, incremental: a no-op right after `npm test`'s
 * build), since child processes load the compiled packages rather than transpiling the sources.
 */
export function buildPackages(): void {
  const projects = ['core', 'testing', 'mongo-emulator', 'mongo-store'].map((p) => `packages/${p}/tsconfig.json`);
  underBuildLock(() => execFileSync(process.execPath, [TSC, '-b', ...projects], { cwd: root, stdio: 'pipe' }));
}

/**
 * Compiles the scripts of `project` (a tsconfig.json) when one of `sources` (in `srcDir`) is newer
 * than its output in `outDir`.
 */
export function buildScripts(project: string, srcDir: string, outDir: string, sources = readdirSync(srcDir).filter((n) => n.endsWith('.ts'))): void {
  const stale = () =>
    sources.some((name) => {
      try {
        return statSync(join(srcDir, name)).mtimeMs > statSync(join(outDir, name.replace(/\.ts$/, '.js'))).mtimeMs;
      } catch {
        return true;
      }
    });
  // Judged again under the lock: another worker may have just built them.
  if (stale()) underBuildLock(() => stale() && execFileSync(process.execPath, [TSC, '-p', project], { cwd: root, stdio: 'pipe' }));
}

/** The packages, then the multi-process scripts. */
export function buildWorkers(): void {
  buildPackages();
  buildScripts(join(here, 'tsconfig.json'), here, join(here, 'dist'), ['worker.ts', 'traced.ts']);
}

/** A child process (see chaos/src/node-process.ts, shared with the chaos run). */
export type Child = NodeProcess;

/** Runs compiled JavaScript `script` with plain node (not this process's jest flags). */
export function spawnScript(script: string, args: string[] = [], env: Record<string, string> = {}): Child {
  return spawnNode(script, args, env, []);
}

/** The emulator run by its bin in a child process, as CI runs it. */
export async function startEmulatorProcess(ms: number): Promise<{ uri: string; child: Child }> {
  const child = spawnScript(EMULATOR_BIN, ['--port', '0']);
  const uri = await child.waitForLine(/^mongodb:\/\//, ms);
  return { uri, child };
}

/** Resolves with how the process ended, or with 'still running' once `ms` have passed. */
export function exitWithin(child: NodeProcess, ms: number): Promise<NodeJS.Signals | number | null | 'still running'> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'still running'>((resolve) => (timer = setTimeout(() => resolve('still running'), ms)));
  return Promise.race([child.exited, deadline]).finally(() => clearTimeout(timer));
}
