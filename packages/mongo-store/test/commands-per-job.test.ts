import { describe, expect, it } from '@jest/globals';
import type { CommandStartedEvent } from 'mongodb';
import type { MongoStore } from '../src/index.js';
import { useMongoFixture } from './fixture.js';
import { at, claimRequest, newJob } from './jobs.js';

// MongoDB commands per job, counted with the driver's command monitoring. Both paths are pinned
// command by command (the figures of packages/mongo-store/README.md): one more round trip per job
// is a regression users pay for on every job.
const fixture = useMongoFixture();
const IGNORED = new Set(['hello', 'ismaster', 'isMaster', 'endSessions', 'ping']);

async function monitoredStore(): Promise<{ store: MongoStore; commands: string[] }> {
  const store = fixture.newStore({ url: fixture.mongo.uri, client: undefined, clientOptions: { monitorCommands: true } });
  await store.init();
  const commands: string[] = [];
  store.client.on('commandStarted', (e: CommandStartedEvent) => {
    if (!IGNORED.has(e.commandName)) commands.push(e.commandName);
  });
  return { store, commands };
}

describe('MongoDB commands per job', () => {
  it('enqueue + claim + complete takes 3 commands, one each', async () => {
    const { store, commands } = await monitoredStore();
    try {
      const [{ id }] = await store.enqueue([newJob()], { now: at(0) });
      const [job] = await store.claim(claimRequest());
      await store.complete({ jobId: id, token: job.lease!.token }, { result: 'ok', now: at(2) });
      console.log(`[mongo-store] commands per job, unbatched: ${commands.length} (${commands.join(', ')})`);
      expect(commands).toEqual(['insert', 'findAndModify', 'update']);
    } finally {
      await store.close();
    }
  });

  it('batched: enqueueMany of 100, claims of 10, one complete per job', async () => {
    const { store, commands } = await monitoredStore();
    try {
      const results = await store.enqueue(Array.from({ length: 100 }, (_, i) => newJob({ payload: { i } })), { now: at(0) });
      const claimed = [];
      for (let round = 0; round < 10; round++) claimed.push(...(await store.claim(claimRequest('w', at(1), 10))));
      expect(claimed).toHaveLength(100);
      for (const job of claimed) await store.complete({ jobId: job.id, token: job.lease!.token }, { now: at(2) });
      expect(new Set(claimed.map((j) => j.id))).toEqual(new Set(results.map((r) => r.id)));
      const counts = commands.reduce<Record<string, number>>((acc, c) => ({ ...acc, [c]: (acc[c] ?? 0) + 1 }), {});
      console.log(`[mongo-store] commands per job, batched: ${(commands.length / 100).toFixed(2)} (${JSON.stringify(counts)} for 100 jobs)`);
      // The README's figure (1.31 per job), pinned per command: one insert for the batch; per claim
      // of 10, a find of the candidates, one bulk update and a find reading them back; one update
      // per completion. Claiming one job per command would show up as 100 findAndModify.
      expect(counts).toEqual({ insert: 1, find: 20, update: 110 });
    } finally {
      await store.close();
    }
  });
});
