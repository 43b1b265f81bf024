import { describe, expect, it } from '@jest/globals';
import { MongoClient, type CommandStartedEvent, type CommandSucceededEvent, type Document } from 'mongodb';
import { MongoStore } from '../src/index.js';
import { quietLogger, useMongoFixture } from './fixture.js';

// serverTime is how an engine measures its clock against the one every engine of the store shares
// (issue 12, defect 4: an engine 60 s behind reclaims running jobs at once). It must be the
// server's answer, read fresh from the primary whatever the client's read preference, and never
// a clock of this process: the reply the driver saw is compared with what the store returns.
const fixture = useMongoFixture();

describe('MongoStore.serverTime', () => {
  it('returns the localTime of a hello it sends to the primary, on a client that prefers secondaries', async () => {
    const client = new MongoClient(fixture.mongo.uri, { readPreference: 'secondaryPreferred', monitorCommands: true });
    type Hello = Document & { $readPreference?: { mode?: string } };
    const started = new Map<number, Hello>();
    const replies: { command: Hello; reply: Document & { localTime?: Date } }[] = [];
    client.on('commandStarted', (e: CommandStartedEvent) => {
      if (e.commandName === 'hello') started.set(e.requestId, e.command);
    });
    client.on('commandSucceeded', (e: CommandSucceededEvent) => {
      const command = started.get(e.requestId);
      if (command) replies.push({ command, reply: e.reply as Document & { localTime?: Date } });
    });
    await client.connect();
    const store = new MongoStore({ client, database: fixture.mongo.newDatabaseName('time'), logger: quietLogger });
    try {
      await store.init();
      replies.length = 0;
      const first = await store.serverTime();
      const second = await store.serverTime();
      expect(replies).toHaveLength(2); // one round trip each, nothing cached
      expect(replies.map((r) => r.reply.localTime)).toEqual([first, second]);
      for (const { command } of replies) expect(command.$readPreference?.mode ?? 'primary').toBe('primary');
    } finally {
      await store.close();
      await client.close();
    }
  });
});
