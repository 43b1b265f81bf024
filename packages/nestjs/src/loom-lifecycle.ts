import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { Loom } from '@loom/core';
import { JobProviders } from './job-providers.js';
import { LOOM_MODULE_OPTIONS, type LoomModuleOptions } from './loom-module-options.js';

/**
 * Ties the engine to the Nest application's lifecycle:
 * - module init: the job instances Nest built are attached (request-scoped ones refused);
 * - application bootstrap: `loom.start()`, after every module's `onModuleInit` has run;
 * - module destroy (`app.close()`, or a signal with `enableShutdownHooks()`): `loom.stop()`, which
 *   lets runs in flight finish within `shutdownGrace` and releases the rest to the queue;
 * - application shutdown (after Nest closed the HTTP server): `store.close()`.
 */
@Injectable()
export class LoomLifecycle implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy, OnApplicationShutdown {
  constructor(
    @Inject(Loom) private readonly loom: Loom,
    @Inject(JobProviders) private readonly jobs: JobProviders,
    @Inject(LOOM_MODULE_OPTIONS) private readonly options: LoomModuleOptions,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.jobs.attach();
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.loom.start();
  }

  async onModuleDestroy(): Promise<void> {
    await this.loom.stop();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.options.store.close();
  }
}
