import { Module, type DynamicModule, type FactoryProvider, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { InvalidArgumentError, Loom, type LoomOptions } from '@loom/core';
import { JobProviders } from './job-providers.js';
import { LoomLifecycle } from './loom-lifecycle.js';
import { LOOM_MODULE_OPTIONS, type LoomModuleAsyncOptions, type LoomModuleOptions } from './loom-module-options.js';

/** Builds the engine once the options and the job providers are known. */
const loomProvider: FactoryProvider<Promise<Loom>> = {
  provide: Loom,
  inject: [LOOM_MODULE_OPTIONS, JobProviders],
  useFactory: (options: LoomModuleOptions, jobs: JobProviders) => {
    const { createLoom, ...loomOptions } = checkOptions(options);
    const create = createLoom ?? ((o: LoomOptions) => Loom.create(o));
    return create({ ...loomOptions, jobs: jobs.classes, resolve: jobs.resolve });
  },
};

function checkOptions(options: LoomModuleOptions): LoomModuleOptions {
  if (typeof options !== 'object' || options === null)
    throw new InvalidArgumentError('LoomModule options', 'must be an object of Loom.create options, e.g. { store }');
  for (const key of ['container', 'resolve'] as const) {
    if (key in options)
      throw new InvalidArgumentError(
        `LoomModule option "${key}"`,
        "is not used: LoomModule builds @Job classes through Nest; list them in a module's providers",
      );
  }
  if (options.createLoom !== undefined && typeof options.createLoom !== 'function')
    throw new InvalidArgumentError('LoomModule option "createLoom"', 'must be a function (options) => Promise<Loom>');
  return options;
}

function loomModule(imports: NonNullable<LoomModuleAsyncOptions['imports']>, optionsProvider: Provider): DynamicModule {
  return {
    module: LoomModule,
    global: true,
    imports: [DiscoveryModule, ...imports],
    providers: [optionsProvider, JobProviders, loomProvider, LoomLifecycle],
    exports: [Loom],
  };
}

/**
 * Loom in a Nest application. Import it once, in the root module; it is global, so any provider can
 * inject the engine with `@InjectLoom()` (or `app.get(Loom)`). `@Job` classes are ordinary
 * providers (`@Injectable()` + `@Job(...)` in any module's `providers`), built by Nest with their
 * constructor dependencies. The engine starts on application bootstrap and stops, within
 * `shutdownGrace`, when the application closes (call `app.enableShutdownHooks()` so SIGTERM closes it).
 *
 * ```ts
 * @Module({
 *   imports: [LoomModule.forRoot({ store: new MongoStore({ url, database: 'app' }), concurrency: 20 })],
 *   providers: [SendReceipt, Mailer],
 * })
 * export class AppModule {}
 * ```
 */
@Module({})
export class LoomModule {
  /** The engine with fixed options. The module closes `options.store` when the application shuts down. */
  static forRoot(options: LoomModuleOptions): DynamicModule {
    return loomModule([], { provide: LOOM_MODULE_OPTIONS, useValue: options });
  }

  /**
   * The engine with options from a factory, e.g. a config service:
   * `LoomModule.forRootAsync({ imports: [ConfigModule], inject: [ConfigService], useFactory: (cfg) => ({ store: ... }) })`.
   */
  static forRootAsync(options: LoomModuleAsyncOptions): DynamicModule {
    if (typeof options !== 'object' || options === null || typeof options.useFactory !== 'function') {
      throw new InvalidArgumentError(
        'LoomModule.forRootAsync options',
        'need useFactory: (...injected) => LoomModuleOptions, with the tokens to inject in `inject`',
      );
    }
    return loomModule(options.imports ?? [], { provide: LOOM_MODULE_OPTIONS, useFactory: options.useFactory, inject: options.inject ?? [] });
  }
}
