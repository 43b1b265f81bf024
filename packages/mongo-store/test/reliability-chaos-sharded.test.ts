import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { chaosConfig } from '../../../chaos/src/config.js';
import type { NodeProcess } from '../../../chaos/src/node-process.js';
import { BUILD_MS, buildChaos, startChaosScript } from './reliability-workers.js';

// The short run of `npm run chaos -- --sharded` (chaos/src/config.ts, profile `ci`): the emulator
// by its bin as a mongos in front of 4 virtual shards, the jobs collection sharded by the commands
// `loom shard-plan` prints, every queue split into 8 partitions, worker processes SIGKILLed and
// restarted, SIGSTOPped past their lease and resumed. Besides what the unsharded run checks
// (reliability-chaos.test.ts), no write of the run may reach more than one shard (the emulator's
// `loomShardStats`). Real time with short leases; every wait is on a line or an exit, with a
// deadline. Compiled JavaScript, as `npm run chaos` runs it (see reliability-workers.ts).
const ENV = { CHAOS_PROFILE: 'ci', CHAOS_SHARDED: '1' };
const config = chaosConfig([], ENV);
// The profile's deadline (with a transaction lifetime per kill) plus the start of the emulator and the workers.
const RUN_MS = config.deadlineMs + 90_000;

let run: NodeProcess | undefined;

beforeAll(buildChaos, BUILD_MS);

afterAll(async () => {
  await run?.kill('SIGKILL');
});

describe('chaos on a sharded cluster (4 virtual shards, queues of 8 partitions), short run', () => {
  it(
    'loses no job, counts no effect twice, accepts no stale completion and sends no write to more than one shard, through kills and pauses',
    async () => {
      expect(config).toMatchObject({ shards: 4, partitions: 8, stepDownEveryMs: 0 });
      run = startChaosScript('controller', ENV);
      const line = await run.waitForLine(/^jobs=\d+ /, RUN_MS);
      const fields = Object.fromEntries(line.split(' ').map((kv) => kv.split('=') as [string, string]));
      const figures = Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, Number(v)]));
      const [peak, limit] = (fields.global_concurrency_peak ?? '').split('/').map(Number);
      // The controller's log comes along, so a failure shows what happened during the run.
      expect({ figures, log: run.lines() }).toMatchObject({
        figures: { jobs: 400, shards: 4, partitions: 8, lost: 0, duplicate_effects: 0, tx_effect_duplicates: 0, stale_acks: 0, writes_broadcast: 0 },
      });
      // Every enqueue, claim, heartbeat and completion is a write: thousands of them were counted, on one shard each.
      expect(figures.writes_targeted).toBeGreaterThan(1_000);
      expect(figures.kills).toBeGreaterThanOrEqual(4);
      expect(figures.pauses).toBeGreaterThanOrEqual(2);
      expect(peak).toBeGreaterThanOrEqual(1);
      expect(peak).toBeLessThanOrEqual(limit!);
      expect(await run.exited).toBe(0);
    },
    RUN_MS + 10_000,
  );
});
