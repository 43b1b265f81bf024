import 'reflect-metadata';
import { Container } from 'inversify';
import { Loom } from '@loom/core';
import { MongoStore } from '@loom/mongo-store';
import { ConsoleMailer, Mailer } from './mailer.js';
import { SendWelcome } from './send-welcome.js';

const container = new Container();
container.bind(Mailer).to(ConsoleMailer);

const store = new MongoStore({
  url: process.env.MONGODB_URI ?? 'mongodb://db1,db2,db3/?replicaSet=rs0',
  database: 'app',
  writeConcern: { w: 'majority' }, // the default: an acknowledged enqueue survives a failover
  retention: { completed: '7d', dead: false }, // the defaults: TTL on completed jobs, dead letters kept
});
const loom = await Loom.create({ container, store, jobs: [SendWelcome], concurrency: 20, lease: '30s', shutdownGrace: '10s' });
await loom.start();

async function shutdown(): Promise<void> {
  await loom.stop(); // stop claiming; running jobs get shutdownGrace, the rest go back to the queue
  await store.close();
  process.exit(0);
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void shutdown());
