import { JobList } from './job-list.js';
import type { StoredJob } from './stored-job.js';

/**
 * The active jobs (`queued`, `running`, `waiting`) of a MemoryStore, one {@link JobList} per job
 * name: a job enters and leaves by pointer writes on its name's list, and the jobs of one name (the
 * scheduler's overlap check, `listJobs` by name) are read without scanning the others. A set of
 * jobs per name beside one list of all was another hash-table insert and delete per job.
 */
export class ActiveJobs {
  readonly #byName = new Map<string, JobList<StoredJob>>();

  constructor(private readonly jobs: ReadonlyMap<string, StoredJob>) {}

  /** The active job with this id. */
  get(id: string): StoredJob | undefined {
    const job = this.jobs.get(id);
    return job?.list?.group === this ? job : undefined;
  }

  has(id: string): boolean {
    return this.get(id) !== undefined;
  }

  /** `job` became active; it must be in no list. */
  add(job: StoredJob): void {
    const { name } = job.record;
    let list = this.#byName.get(name);
    if (list === undefined) this.#byName.set(name, (list = new JobList<StoredJob>(this)));
    list.add(job);
  }

  /** `job` is no longer active; false when it was not. */
  remove(job: StoredJob): boolean {
    const { list } = job;
    return list?.group === this && list.remove(job);
  }

  /** The active jobs of one name, in the order they became active. */
  named(name: string): Iterable<StoredJob> {
    return this.#byName.get(name) ?? [];
  }

  /** Every active job: name by name, each in the order they became active. */
  *values(): IterableIterator<StoredJob> {
    for (const list of this.#byName.values()) yield* list.values();
  }
}
