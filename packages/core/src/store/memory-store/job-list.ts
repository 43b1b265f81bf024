/** What a job carries to be in a {@link JobList}: owned by the list. */
export interface ListLinks<T extends ListLinks<T>> {
  /** The list it is in, if any, and its neighbours there. */
  list: JobList<T> | undefined;
  prev: T | undefined;
  next: T | undefined;
}

/**
 * The jobs of one state (active, completed), in the order they entered it, linked through the jobs
 * themselves: a job moves in and out of a list by a few pointer writes, where a `Map` keyed by id
 * hashed into a table of the whole state. On the 100,000-job MemoryStore bench, moving each
 * completed job from one `Map` to the other was a tenth of the CPU per job (bench/README.md,
 * "Issue 33 items 2/3: pretenuring, one map of jobs (7 December)"). A list has no lookup by id:
 * that is the store's one map of every job (`MemoryState.jobs`), and a job's `list` tells which
 * list holds it. A job is in one list at most.
 */
export class JobList<T extends ListLinks<T>> {
  #head: T | undefined;
  #tail: T | undefined;

  /** @param group what the list belongs to, when several lists make one state (`ActiveJobs`). */
  constructor(readonly group?: object) {}

  /** Appends `job`, which must be in no list. */
  add(job: T): void {
    job.list = this;
    job.prev = this.#tail;
    job.next = undefined;
    if (this.#tail === undefined) this.#head = job;
    else this.#tail.next = job;
    this.#tail = job;
  }

  /** Takes `job` out of this list; false when it was not in it. */
  remove(job: T): boolean {
    if (job.list !== this) return false;
    const { prev, next } = job;
    if (prev === undefined) this.#head = next;
    else prev.next = next;
    if (next === undefined) this.#tail = prev;
    else next.prev = prev;
    job.list = undefined;
    job.prev = undefined;
    job.next = undefined;
    return true;
  }

  /**
   * The jobs in the order they entered. The job just handed out may be removed during the loop
   * (retention does); any other job may not.
   */
  *values(): IterableIterator<T> {
    for (let job = this.#head; job !== undefined;) {
      const next = job.next;
      yield job;
      job = next;
    }
  }

  [Symbol.iterator](): IterableIterator<T> {
    return this.values();
  }
}
