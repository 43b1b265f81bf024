import { afterAll, describe, expect, it } from '@jest/globals';
import { fileURLToPath } from 'node:url';
import { spawnTs, type Child } from './processes/children.js';

// The short configuration of `npm run chaos` (chaos/src/config.ts, profile `ci`): the emulator by
// its bin, worker processes SIGKILLed and restarted, SIGSTOPped past their lease and resumed.
// Real time with short leases; every wait is on a condition (a line, an exit) with a deadline.
const CONTROLLER = fileURLToPath(new URL('../../../chaos/src/controller.ts', import.meta.url));
const RUN_MS = 280_000;

let run: Child | undefined;
afterAll(async () => {
  await run?.kill('SIGKILL');
});

describe('chaos, short run', () => {
  it('loses no job, applies no effect twice and accepts no stale completion through kills and pauses', async () => {
    run = spawnTs(CONTROLLER, ['--ci']);
    const line = await run.waitForLine(/^jobs=\d+ /, RUN_MS);
    const figures = Object.fromEntries(line.split(' ').map((kv) => kv.split('=')).map(([k, v]) => [k, Number(v)]));
    expect(figures).toMatchObject({ jobs: 400, lost: 0, duplicate_effects: 0, stale_acks: 0 });
    expect(figures.kills).toBeGreaterThanOrEqual(4);
    expect(figures.pauses).toBeGreaterThanOrEqual(2);
    expect(await run.exited).toBe(0);
  }, RUN_MS + 10_000);
});
