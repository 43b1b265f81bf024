import { Agenda, type Job } from 'agenda';
import { MongoBackend } from '@agendajs/mongo-backend';
import { CommandCounter } from './command-counter.js';
import type { MongoTargetRef } from './scenario.js';

/** Agenda 6 on @agendajs/mongo-backend, handed our command-monitored client's Db. */
export interface AgendaOnMongo {
  agenda: Agenda;
  counter: CommandCounter;
  close(): Promise<void>;
}

/**
 * Builds Agenda with its defaults except the concurrency (global and per job, so it may run as many
 * jobs at once as Loom) and, when given, `processEvery`.
 */
export async function openAgendaOnMongo(
  target: MongoTargetRef,
  define: (agenda: Agenda) => void,
  opts: { concurrency: number; processEveryMs?: number },
): Promise<AgendaOnMongo> {
  const counter = new CommandCounter(target.uri, 'agendaJobs'); // @agendajs/mongo-backend's default collection
  await counter.client.connect();
  const db = counter.client.db(target.db);
  await db.dropDatabase();
  const agenda = new Agenda({
    backend: new MongoBackend({ mongo: db }),
    maxConcurrency: opts.concurrency,
    defaultConcurrency: opts.concurrency,
    ...(opts.processEveryMs === undefined ? {} : { processEvery: opts.processEveryMs }),
  });
  agenda.on('error', (err: Error) => console.error('[bench] agenda error:', err));
  define(agenda);
  await agenda.ready;
  return {
    agenda,
    counter,
    async close() {
      await agenda.stop();
      await db.dropDatabase();
      await counter.close();
    },
  };
}

export type { Job as AgendaJob };
