import { injectable } from 'inversify';
import type { z } from 'zod';
import type { BatchContext, BatchItem, JobContext } from './job-class.js';
import { recordJobOptions } from './job-metadata.js';
import { LoomError } from '../support/errors.js';
import type { JobOptions, SchemaPayload } from './job-options.js';

/** The reflect-metadata key inversify marks an `@injectable()` class with (inversify 7 and 8). */
const INVERSIFY_INJECTABLE_FLAG = '@inversifyjs/core/classIsInjectableFlagReflectKey';

/**
 * Marks a class as a Loom job. It only records `options` (validated later, by `Loom.create`) and
 * makes the class injectable for inversify. You need no `@injectable()` of your own; one written
 * above or below `@Job` (say, for a scope) is accepted.
 *
 * The class's `run` must accept the payload schema's type; TypeScript checks this here.
 *
 * ```ts
 * @Job({ name: 'send-receipt', payload: Receipt, retries: 5 })
 * class SendReceipt {
 *   constructor(@inject(Mailer) private readonly mailer: Mailer) {}
 *   async run(payload: z.infer<typeof Receipt>, ctx: JobContext) { ... }
 * }
 * ```
 */
export function Job<S extends z.ZodType | undefined = undefined>(
  options: JobOptions<S> = {},
): <
  C extends abstract new (
    ...args: any[]
  ) => { run(payload: SchemaPayload<S>, ctx: JobContext): unknown } | { runBatch(items: BatchItem<SchemaPayload<S>>[], ctx: BatchContext): unknown },
>(
  target: C,
) => void {
  return (target, context?: unknown) => {
    refuseStandardDecorators(target, context);
    recordJobOptions(target, options as JobOptions);
    try {
      injectable()(target);
    } catch (err) {
      // `@injectable()` placed below `@Job` already did this; anything else is a real problem.
      if (!(err instanceof Error && /multiple times/.test(err.message))) throw err;
      return;
    }
    // inversify throws "Cannot apply @injectable decorator multiple times" when it finds this
    // flag; without it, an `@injectable()` written above `@Job` (it runs after `@Job`) applies
    // again cleanly. The class metadata injection needs stays.
    Reflect.deleteMetadata(INVERSIFY_INJECTABLE_FLAG, target);
  };
}

/**
 * Without `experimentalDecorators`, TypeScript (5.0+) compiles `@Job` as a standard (TC39)
 * decorator, called with `(value, context)`. Standard decorators emit no parameter metadata and
 * allow no parameter decorators, so a job could not get its constructor dependencies: it would
 * work only until it needs one. Refused at once, naming the settings, rather than half-supported.
 */
function refuseStandardDecorators(target: { name: string }, context: unknown): void {
  if (typeof context !== 'object' || context === null || (context as { kind?: unknown }).kind !== 'class') return;
  throw new LoomError(
    'INVALID_JOB_CLASS',
    `@Job on class ${target.name} ran as a standard (TC39) decorator: Loom needs TypeScript's legacy decorators. ` +
      'Set "experimentalDecorators": true and "emitDecoratorMetadata": true in the compilerOptions of your tsconfig.json ' +
      '(vitest and other esbuild-based runners read the same file).',
  );
}
