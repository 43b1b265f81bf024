import { DuplicateJobNameError, InvalidJobClassError, JobNotRegisteredError } from '../support/errors.js';
import type { JobClass } from './job-class.js';
import type { JobDefinition } from './job-definition.js';
import { isDecoratedTwice, readJobOptions } from './job-metadata.js';
import { parseJobOptions } from './job-options-schema.js';

/** The validated job definitions of one engine, by name and by class. */
export class JobRegistry {
  private readonly byNameMap = new Map<string, JobDefinition>();
  private readonly byClassMap = new Map<JobClass, JobDefinition>();

  /**
   * Validates each class (has `@Job`, has `run`, options valid) and refuses two classes with one
   * job name. Every problem is an error naming the class.
   */
  constructor(classes: readonly JobClass[]) {
    for (const jobClass of new Set(classes)) {
      if (typeof jobClass !== 'function') throw new InvalidJobClassError(String(jobClass), 'is not a class');
      const className = jobClass.name || '(anonymous class)';
      const raw = readJobOptions(jobClass);
      if (raw === undefined) throw new InvalidJobClassError(className, 'has no @Job(...) decorator; add one, or leave it out of `jobs`');
      if (isDecoratedTwice(jobClass)) throw new InvalidJobClassError(className, 'has more than one @Job(...) decorator; keep one');
      const def = parseJobOptions(jobClass, raw);
      const handler = def.batch ? 'runBatch' : 'run';
      if (typeof (jobClass.prototype as Record<string, unknown>)[handler] !== 'function') {
        throw new InvalidJobClassError(
          className,
          def.batch
            ? 'has the batch option but no runBatch(items, ctx) method; a batch handler must define one'
            : 'has no run(payload, ctx) method; a @Job class must define one',
        );
      }
      const taken = this.byNameMap.get(def.name);
      if (taken) throw new DuplicateJobNameError(def.name, taken.className, className);
      this.byNameMap.set(def.name, def);
      this.byClassMap.set(jobClass, def);
    }
  }

  /** The definition of a job class; throws `JobNotRegisteredError` when this engine does not know it. */
  byClass(jobClass: JobClass): JobDefinition {
    const def = this.byClassMap.get(jobClass);
    if (!def) throw new JobNotRegisteredError((jobClass as { name?: string } | undefined)?.name || String(jobClass));
    return def;
  }

  byName(name: string): JobDefinition | undefined {
    return this.byNameMap.get(name);
  }

  all(): readonly JobDefinition[] {
    return [...this.byNameMap.values()];
  }

  /** Every queue some known job uses. */
  queues(): string[] {
    return [...new Set(this.all().map((d) => d.queue))];
  }
}
