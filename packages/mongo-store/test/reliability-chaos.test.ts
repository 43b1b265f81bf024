import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { chaosConfig } from '../../../chaos/src/config.js';
import type { NodeProcess } from '../../../chaos/src/node-process.js';
import { BUILD_MS, buildChaos, startChaosScript } from './reliability-workers.js';

// The short configuration of `npm run chaos` (chaos/src/config.ts, profile `ci`): the emulator by
// its bin, worker processes SIGKILLed and restarted, SIGSTOPped past their lease and resumed.
// Real time with short leases; every wait is on a condition (a line, an exit) with a deadline.
// Compiled JavaScript, as `npm run chaos` runs it (see reliability-workers.ts).
// The profile's deadline (with a transaction lifetime per kill, see chaos/src/config.ts) plus
// the start of the emulator and the workers.
const RUN_MS = chaosConfig(['--ci'], {}).deadlineMs + 90_000;

let run: NodeProcess | undefined;

beforeAll(buildChaos, BUILD_MS);

afterAll(async () => {
  await run?.kill('SIGKILL');
});

describe('chaos, short run', () => {
  it(
    'loses no job, counts no effect twice (also the transactional one with no unique index), accepts no stale completion and runs no more of a globally limited job than its limit, through kills and pauses',
    async () => {
      run = startChaosScript('controller', { CHAOS_PROFILE: 'ci' });
      const line = await run.waitForLine(/^jobs=\d+ /, RUN_MS);
      const fields = Object.fromEntries(line.split(' ').map((kv) => kv.split('=') as [string, string]));
      const figures = Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, Number(v)]));
      // `global_concurrency_peak=P/N`: the most runs of the `globalConcurrency: N` job holding a valid lease at once.
      const [peak, limit] = (fields.global_concurrency_peak ?? '').split('/').map(Number);
      // The controller's log comes along, so a failure shows what happened during the run.
      expect({ figures, log: run.lines() }).toMatchObject({ figures: { jobs: 400, lost: 0, duplicate_effects: 0, tx_effect_duplicates: 0, stale_acks: 0 } });
      expect(figures.kills).toBeGreaterThanOrEqual(4);
      expect(figures.pauses).toBeGreaterThanOrEqual(2);
      expect(limit).toBe(4);
      expect(peak).toBeGreaterThanOrEqual(1);
      expect(peak).toBeLessThanOrEqual(limit);
      expect(await run.exited).toBe(0);
    },
    RUN_MS + 10_000,
  );
});
