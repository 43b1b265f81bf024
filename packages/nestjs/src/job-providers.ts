import { Inject, Injectable, Scope } from '@nestjs/common';
import { DiscoveryService, ModuleRef } from '@nestjs/core';
import { EngineStateError, InvalidJobClassError, readJobOptions, type JobClass, type JobHandler, type ResolveJob } from '@loom/core';
import { LOOM_MODULE_OPTIONS, type LoomModuleOptions } from './loom-module-options.js';

/** Nest's record of one provider (its token, scope, instance and host module). */
type ProviderWrapper = ReturnType<DiscoveryService['getProviders']>[number];

/** A `@Job` class some module provides, and where. */
interface JobProvider {
  jobClass: JobClass;
  wrapper: ProviderWrapper;
  moduleName: string;
}

/**
 * The `@Job` classes of a Nest application, found through Nest's `DiscoveryService`: every provider
 * whose token is a `@Job` class (`providers: [SendReceipt]`, or `{ provide: SendReceipt, useValue }`
 * in a test). Each is used from the module that provides it, as Nest built it.
 *
 * Why the engine gets stand-ins first: Nest builds `Loom` (an async factory) while it is still
 * instantiating the app's providers, in module order, so a job instance may not exist yet, and a
 * job that injects `Loom` to enqueue follow-ups could never exist before it. So `resolve` hands
 * `Loom.create` a stand-in per class that forwards `run` to the real instance, and `attach`
 * (called on module init, when Nest has built every provider and no job can run yet) looks the
 * instances up and checks their scope.
 */
@Injectable()
export class JobProviders {
  /** The job classes the engine runs, in discovery order (or the order of `options.jobs`). */
  readonly classes: JobClass[];
  private readonly providers = new Map<JobClass, JobProvider>();
  private readonly instances = new Map<JobClass, JobHandler>();

  constructor(@Inject(DiscoveryService) discovery: DiscoveryService, @Inject(LOOM_MODULE_OPTIONS) options: LoomModuleOptions) {
    for (const wrapper of discovery.getProviders()) {
      const { token } = wrapper;
      if (typeof token !== 'function' || readJobOptions(token) === undefined) continue;
      const provider: JobProvider = { jobClass: token as JobClass, wrapper, moduleName: wrapper.host?.name ?? 'an unnamed module' };
      // Only the provider's own scope is known before Nest instantiates it; a job made
      // request-scoped by a dependency is caught in `attach`.
      if (wrapper.scope === Scope.REQUEST) throw requestScoped(provider, 'is');
      const other = this.providers.get(provider.jobClass);
      if (other) {
        throw new InvalidJobClassError(
          token.name,
          `is provided by two modules, ${other.moduleName} and ${provider.moduleName}; Loom runs one instance per job class: provide it in one module (and export it from there if others need it)`,
        );
      }
      this.providers.set(provider.jobClass, provider);
    }
    for (const jobClass of options.jobs ?? []) {
      // A class without @Job is left to Loom.create, whose error says so.
      if (readJobOptions(jobClass) !== undefined && !this.providers.has(jobClass)) {
        throw new InvalidJobClassError(jobClass.name, "is listed in LoomModule's `jobs` but no module provides it: add it to the `providers` of a module");
      }
    }
    this.classes = options.jobs ? [...options.jobs] : [...this.providers.keys()];
  }

  /** `Loom.create`'s `resolve`: a stand-in whose `run` (and `runBatch`, for a batch handler) is the provider instance's, once attached. */
  readonly resolve: ResolveJob = (jobClass) => {
    const attached = (): Record<string, (a: unknown, b: unknown) => unknown> => {
      const instance = this.instances.get(jobClass);
      if (!instance) {
        throw new EngineStateError(
          `Job class ${jobClass.name} ran before the Nest application finished initialising; let LoomModule start the engine (app.init() or app.listen()) instead of calling loom.start() earlier`,
        );
      }
      return instance as unknown as Record<string, (a: unknown, b: unknown) => unknown>;
    };
    return {
      run: (payload, ctx) => attached().run!(payload, ctx),
      runBatch: (items, ctx) => attached().runBatch!(items, ctx),
    } as JobHandler;
  };

  /**
   * Looks up the instance of every job provider the engine runs, in the module that provides it;
   * refuses request-scoped ones. A transient provider is built once, for the engine.
   */
  async attach(): Promise<void> {
    for (const jobClass of this.classes) {
      const provider = this.providers.get(jobClass);
      if (!provider) continue;
      const { wrapper } = provider;
      if (!wrapper.isDependencyTreeStatic()) throw requestScoped(provider, 'depends on a request-scoped provider, which makes it');
      // A transient wrapper holds no instance of its own (each consumer gets one): ask its module.
      const instance = (
        wrapper.isTransient
          ? await wrapper.host?.getProviderByKey<ModuleRef>(ModuleRef).instance.resolve(jobClass, undefined, { strict: true })
          : wrapper.instance
      ) as JobHandler | undefined;
      const handler = instance as { run?: unknown; runBatch?: unknown } | undefined;
      if (typeof handler?.run !== 'function' && typeof handler?.runBatch !== 'function') {
        throw new InvalidJobClassError(
          jobClass.name,
          `is provided by ${provider.moduleName} as something without a run (or runBatch) method; provide the class itself or an object with run(payload, ctx)`,
        );
      }
      this.instances.set(jobClass, instance!);
    }
  }
}

function requestScoped(provider: JobProvider, is: string): InvalidJobClassError {
  return new InvalidJobClassError(
    provider.jobClass.name,
    `(provided by ${provider.moduleName}) ${is} request-scoped; a job runs outside any request, through one instance per engine: make it default-scoped and take request data through the payload`,
  );
}
