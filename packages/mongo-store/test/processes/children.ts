import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, resolve } from 'node:path';
import { spawnNode, type NodeProcess } from '../../../../chaos/src/node-process.js';

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

/** A child process (see chaos/src/node-process.ts, shared with the chaos run). */
export type Child = NodeProcess;

/** Runs `script`: a .ts script through the TypeScript hooks, compiled JavaScript as it is. */
export function spawnTs(script: string, args: string[] = [], env: Record<string, string> = {}): Child {
  return spawnNode(script, args, env, script.endsWith('.ts') ? ['--import', register] : []);
}

/** The emulator run by its bin in a child process, as CI runs it. */
export async function startEmulatorProcess(ms: number): Promise<{ uri: string; child: Child }> {
  const child = spawnTs(EMULATOR_BIN, ['--port', '0']);
  const uri = await child.waitForLine(/^mongodb:\/\//, ms);
  return { uri, child };
}
