import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { spawnNode, type NodeProcess } from '../../../chaos/src/node-process.js';

// The short configuration of `npm run chaos` (chaos/src/config.ts, profile `ci`): the emulator by
// its bin, worker processes SIGKILLed and restarted, SIGSTOPped past their lease and resumed.
// Real time with short leases; every wait is on a condition (a line, an exit) with a deadline.
// It runs compiled JavaScript, as `npm run chaos` does: a worker restarted after a kill then starts
// in a few seconds instead of the half minute it takes to transpile the sources on a busy machine.
// The build is incremental (`npm test` has just built the packages; then only chaos/ compiles).
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BUILD_MS = 240_000;
const RUN_MS = 240_000;

let run: NodeProcess | undefined;

beforeAll(() => {
  const tsc = [`${ROOT}node_modules/typescript/bin/tsc`];
  const packages = ['core', 'mongo-emulator', 'mongo-store'].map((p) => `packages/${p}/tsconfig.json`);
  execFileSync(process.execPath, [...tsc, '-b', ...packages], { cwd: ROOT, stdio: 'pipe' });
  execFileSync(process.execPath, [...tsc, '-p', 'chaos/tsconfig.json'], { cwd: ROOT, stdio: 'pipe' });
}, BUILD_MS);

afterAll(async () => {
  if (run?.alive) run.process.kill('SIGKILL');
});

describe('chaos, short run', () => {
  it('loses no job, applies no effect twice and accepts no stale completion through kills and pauses', async () => {
    run = spawnNode(`${ROOT}chaos/dist/controller.js`, ['--ci'], {}, []);
    const line = await run.waitForLine(/^jobs=\d+ /, RUN_MS);
    const figures = Object.fromEntries(line.split(' ').map((kv) => kv.split('=')).map(([k, v]) => [k, Number(v)]));
    // The controller's log comes along, so a failure shows what happened during the run.
    expect({ figures, log: run.lines() }).toMatchObject({ figures: { jobs: 400, lost: 0, duplicate_effects: 0, stale_acks: 0 } });
    expect(figures.kills).toBeGreaterThanOrEqual(4);
    expect(figures.pauses).toBeGreaterThanOrEqual(2);
    expect(await run.exited).toBe(0);
  }, RUN_MS + 10_000);
});
