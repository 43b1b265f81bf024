import { Global, Injectable, Logger, Module, type OnApplicationShutdown } from '@nestjs/common';
import type { MongoClient } from 'mongodb';
import { startTestMongo, type TestMongo } from '@loom/testing/mongo';

/**
 * The MongoDB of the app, found with no setup: `MONGODB_URI` when set, else a mongod started by
 * mongodb-memory-server if one can run here, else the in-process emulator (which keeps nothing
 * after exit). A real app would connect to `MONGODB_URI` and stop there.
 */
@Injectable()
export class MongoConnection implements OnApplicationShutdown {
  constructor(private readonly mongo: TestMongo) {}

  get client(): MongoClient {
    return this.mongo.client;
  }

  /** One line saying which MongoDB this is. */
  get description(): string {
    return {
      uri: 'MongoDB: MONGODB_URI; data stays there after exit',
      'memory-server': 'MongoDB: a mongod started by mongodb-memory-server, deleted at exit (set MONGODB_URI to keep data)',
      emulator: 'MongoDB: the in-process emulator (no MONGODB_URI, no mongod could start here); it keeps nothing after exit',
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

/** Global, like Nest's database modules: every module (and LoomModule's factory) can inject it. */
@Global()
@Module({
  providers: [{ provide: MongoConnection, useFactory: async () => new MongoConnection(await startTestMongo({ log: () => {}, memoryServerTimeoutMs: 15_000 })) }],
  exports: [MongoConnection],
})
export class MongoModule {}
