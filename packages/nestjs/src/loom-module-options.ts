import type { DynamicModule, ForwardReference, InjectionToken, OptionalFactoryDependency, Type } from '@nestjs/common';
import type { Loom, LoomOptions } from '@loom/core';

/**
 * Options of `LoomModule.forRoot`: `Loom.create`'s, without `container` and `resolve` (the module
 * builds `@Job` classes through Nest).
 */
export interface LoomModuleOptions extends Omit<LoomOptions, 'container' | 'resolve'> {
  /**
   * Restrict the engine to these job classes; each must be a provider of some module.
   * @default every provider whose token is a `@Job` class
   */
  jobs?: LoomOptions['jobs'];
  /**
   * Builds the engine from the final options (with `jobs` and `resolve` filled in by the module).
   * Tests pass `createTestLoom` here to drive the app's engine on a FakeClock.
   * @default Loom.create
   */
  createLoom?: (options: LoomOptions) => Promise<Loom>;
}

/** Options of `LoomModule.forRootAsync`: the module options come from a factory with Nest injection. */
export interface LoomModuleAsyncOptions {
  /** Modules whose exported providers `useFactory` injects (e.g. a config module). */
  imports?: Array<Type<unknown> | DynamicModule | Promise<DynamicModule> | ForwardReference>;
  /** Tokens of the providers handed to `useFactory`, in order. */
  inject?: Array<InjectionToken | OptionalFactoryDependency>;
  useFactory: (...args: any[]) => LoomModuleOptions | Promise<LoomModuleOptions>;
}

/** Injection token of the resolved {@link LoomModuleOptions}. */
export const LOOM_MODULE_OPTIONS = Symbol.for('@loom/nestjs/module-options');
