import { injectable } from 'inversify';
import type { z } from 'zod';
import type { JobContext } from './job-context.js';
import { recordJobOptions } from './job-metadata.js';
import type { JobOptions, SchemaPayload } from './job-options.js';

/**
 * Marks a class as a Loom job. It only records `options` (validated later, by `Loom.create`) and
 * makes the class injectable for inversify, so do not add `@injectable()` yourself.
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
): <C extends abstract new (...args: any[]) => { run(payload: SchemaPayload<S>, ctx: JobContext): unknown }>(target: C) => void {
  return (target) => {
    recordJobOptions(target, options as JobOptions<any>);
    try {
      injectable()(target);
    } catch (err) {
      // `@injectable()` placed below `@Job` already did this; anything else is a real problem.
      if (!(err instanceof Error && /multiple times/.test(err.message))) throw err;
    }
  };
}
