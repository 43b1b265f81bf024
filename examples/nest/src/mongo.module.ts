import { Global, Injectable, Logger, Module, type OnApplicationShutdown } from '@nestjs/common';
import { MongoClient } from 'mongodb';
import { appMongo } from '@loom/mongo-emulator';
import type { TestMongo } from '@loom/testing/mongo';

/**
 * The MongoDB of the app, found with no setup by `appMongo()`: `MONGODB_URI` when set (always, in
 * production), else the in-process emulator (which keeps nothing after exit). Tests hand in their
 * own (a `TestMongo`).
 */
@Injectable()
export class MongoConnection implements OnApplicationShutdown {
  constructor(private readonly mongo: Pick<TestMongo, 'client' | 'kind' | 'stop'>) {}

  get client(): MongoClient {
    return this.mongo.client;
  }

  /** One line saying which MongoDB this is. */
  get description(): string {
    return {
      uri: 'MongoDB: MONGODB_URI; data stays there after exit',
      'memory-server': 'MongoDB: a mongod started by mongodb-memory-server, deleted at exit (set MONGODB_URI to keep data)',
      emulator: 'MongoDB: the in-process emulator, because MONGODB_URI is not set; it keeps nothing after exit',
    }[this.mongo.kind];
  }

  /**
   * Last of the shutdown. Nest runs the global modules' shutdown hooks in reverse import order, and
   * AppModule imports this module before LoomModule: Loom has stopped and closed its store by now.
   */
  async onApplicationShutdown(): Promise<void> {
    await this.mongo.stop();
    new Logger('MongoModule').log('MongoDB closed');
  }
}

async function openMongoConnection(): Promise<MongoConnection> {
  const mongo = await appMongo({ log: () => {} }); // main.ts prints the connection's description
  const client = await new MongoClient(mongo.uri).connect();
  return new MongoConnection({
    client,
    kind: mongo.source === 'emulator' ? 'emulator' : 'uri',
    stop: async () => {
      await client.close();
      await mongo.close();
    },
  });
}

/** Global, like Nest's database modules: every module (and LoomModule's factory) can inject it. */
@Global()
@Module({
  providers: [{ provide: MongoConnection, useFactory: openMongoConnection }],
  exports: [MongoConnection],
})
export class MongoModule {}
