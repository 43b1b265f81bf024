import 'reflect-metadata';
import type { JobClass } from './job-class.js';
import type { JobOptions } from './job-options.js';

/**
 * The one accessor for `@Job` metadata. The decorator writes here; discovery reads here; nothing
 * else touches the reflect key.
 */

/** Namespaced reflect-metadata key under which `@Job` records its raw options. */
export const JOB_OPTIONS_METADATA_KEY = '@loom/core/job-options';

// Shared through a Symbol.for global so that two copies of @loom/core still see one list.
const REGISTRY = Symbol.for('@loom/core/decorated-job-classes');

function decorated(): JobClass[] {
  const holder = globalThis as unknown as Record<symbol, JobClass[] | undefined>;
  return (holder[REGISTRY] ??= []);
}

/** Marks a class that got `@Job` more than once (refused at `Loom.create`). */
const DECORATED_TWICE_METADATA_KEY = '@loom/core/job-decorated-twice';

/** Records `options` on `target` and remembers the class for discovery. */
export function recordJobOptions(target: JobClass, options: JobOptions): void {
  if (Reflect.hasOwnMetadata(JOB_OPTIONS_METADATA_KEY, target)) Reflect.defineMetadata(DECORATED_TWICE_METADATA_KEY, true, target);
  Reflect.defineMetadata(JOB_OPTIONS_METADATA_KEY, options, target);
  const list = decorated();
  if (!list.includes(target)) list.push(target);
}

/** The raw `@Job` options of exactly this class (not inherited), or undefined when it has none. */
export function readJobOptions(target: object): JobOptions | undefined {
  return Reflect.getOwnMetadata(JOB_OPTIONS_METADATA_KEY, target) as JobOptions | undefined;
}

/** True when `@Job` was applied to this class more than once. */
export function isDecoratedTwice(target: object): boolean {
  return Reflect.getOwnMetadata(DECORATED_TWICE_METADATA_KEY, target) === true;
}

/** Every class decorated with `@Job` in this process so far, in decoration order. */
export function decoratedJobClasses(): readonly JobClass[] {
  return [...decorated()];
}
