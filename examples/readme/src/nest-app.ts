import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Job, Loom, MemoryStore } from '@loom/core';
import { LoomModule } from '@loom/nestjs';

@Injectable()
export class Greeter {
  greet(name: string): string {
    return `hello, ${name}`;
  }
}

// A job is a Nest provider: Nest builds it with its constructor dependencies (emitDecoratorMetadata).
@Injectable()
@Job({ name: 'greet' })
export class Greet {
  constructor(private readonly greeter: Greeter) {}

  async run(payload: { name: string }): Promise<void> {
    console.log(this.greeter.greet(payload.name));
  }
}

@Module({
  imports: [LoomModule.forRoot({ store: new MemoryStore() })],
  providers: [Greeter, Greet],
})
export class AppModule {}

/**
 * A Nest 11 app with `@loom/nestjs`: the engine starts with the app, runs one job, and stops when
 * the app closes. The packaging test runs it from the packed tarballs, as a CommonJS project
 * (Nest's default; hence no top-level await).
 */
async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
  await app.init();
  const loom = app.get(Loom);
  const { id } = await loom.enqueue(Greet, { name: 'nest' });
  const completed = new Promise<void>((resolve) => loom.on('job:completed', ({ job }) => job.id === id && resolve()));
  if ((await loom.getJob(id))?.status !== 'completed') await completed;
  await app.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
