import { Module } from '@nestjs/common';
import { MongoStore } from '@loom/mongo-store';
import { LoomModule } from '@loom/nestjs';

// @nestjs/config's, as far as the snippet uses them.
@Module({})
class ConfigModule {}
declare class ConfigService {
  getOrThrow(key: string): string;
  get<T>(key: string, fallback: T): T;
}

export const loomModule = LoomModule.forRootAsync({
  imports: [ConfigModule],
  inject: [ConfigService],
  useFactory: (config: ConfigService) => ({
    store: new MongoStore({ url: config.getOrThrow('MONGODB_URI'), database: 'app' }),
    concurrency: config.get('LOOM_CONCURRENCY', 10),
  }),
});
