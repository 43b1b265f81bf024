import 'reflect-metadata';
import { Container } from 'inversify';
import { Loom } from '@loom/core';
import { appMongo } from '@loom/mongo-emulator';
import { MongoStore } from '@loom/mongo-store';
import { ConsoleMailer, Mailer } from './mailer.js';
import { SendWelcome } from './send-welcome.js';

/**
 * A development run on MongoDB with no setup: sends one welcome mail through `MongoStore` on
 * `MONGODB_URI` or the emulator, then exits. No top-level await, so the same file runs as an ES
 * module and as CommonJS.
 */
async function main(): Promise<void> {
  const mongo = await appMongo(); // MONGODB_URI, else (never in production) the in-process emulator; logs which
  const store = new MongoStore({ url: mongo.uri, database: 'app' });
  const container = new Container();
  container.bind(Mailer).to(ConsoleMailer);
  const loom = await Loom.create({ container, store, jobs: [SendWelcome] });
  const { id } = await loom.enqueue(SendWelcome, { userId: 'u1', email: 'ada@example.com' });
  const completed = new Promise<void>((resolve) => loom.on('job:completed', ({ job }) => job.id === id && resolve()));
  await loom.start();
  if ((await loom.getJob(id))?.status !== 'completed') await completed; // an earlier run may have sent it
  await loom.stop();
  await store.close();
  await mongo.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
