import { Module } from '@nestjs/common';
import { MongoStore } from '@loom/mongo-store';
import { LoomModule } from '@loom/nestjs';
import { DeadLettersController } from './dead-letters.controller.js';
import { JobLog } from './job-log.js';
import { MongoConnection, MongoModule } from './mongo.module.js';
import { SignupsModule } from './signups/signups.module.js';

@Module({
  imports: [
    MongoModule,
    LoomModule.forRootAsync({
      inject: [MongoConnection],
      useFactory: (mongo: MongoConnection) => ({
        store: new MongoStore({ client: mongo.client, database: 'loom_nest' }),
        concurrency: 10,
        shutdownGrace: '10s',
      }),
    }),
    SignupsModule,
  ],
  controllers: [DeadLettersController],
  providers: [JobLog],
})
export class AppModule {}
