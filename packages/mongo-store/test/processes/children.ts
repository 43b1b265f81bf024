import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
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

/**
 * Brings the packages' dist/ up to date (`tsc -b`, incremental: a no-op right after `npm test`'s
 * build), since child processes load the compiled packages rather than transpiling the sources.
 */
export function buildPackages(): void {
  const projects = ['core', 'testing', 'mongo-emulator', 'mongo-store'].map((p) => `packages/${p}/tsconfig.json`);
  execFileSync(process.execPath, [TSC, '-b', ...projects], { cwd: root, stdio: 'pipe' });
}

/**
 * Compiles the scripts of `project` (a tsconfig.json) when one of `sources` (in `srcDir`) is newer
 * than its output in `outDir`.
 */
export function buildScripts(project: string, srcDir: string, outDir: string, sources = readdirSync(srcDir).filter((n) => n.endsWith('.ts'))): void {
  const stale = sources.some((name) => {
    try {
      return statSync(join(srcDir, name)).mtimeMs > statSync(join(outDir, name.replace(/\.ts$/, '.js'))).mtimeMs;
    } catch {
      return true;
    }
  });
  if (stale) execFileSync(process.execPath, [TSC, '-p', project], { cwd: root, stdio: 'pipe' });
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
