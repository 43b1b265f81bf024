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
 * "Issue 33 items 2/3: pretenuring, one map of jobs (7 December)"). Lookups by id go through the
 * store's one map of every job (`MemoryState.jobs`); a list answers for those of its state only.
 * A job is in one list at most.
 */
export class JobList<T extends ListLinks<T>> {
  #head: T | undefined;
  #tail: T | undefined;
  #size = 0;

  /**
   * @param jobs every job of the store, by id.
   * @param group what the list belongs to, when several lists make one state (`ActiveJobs`).
   */
  constructor(
    private readonly jobs: ReadonlyMap<string, T>,
    readonly group?: object,
  ) {}

  get size(): number {
    return this.#size;
  }

  /** The job with this id, if it is in this list. */
  get(id: string): T | undefined {
    const job = this.jobs.get(id);
    return job !== undefined && job.list === this ? job : undefined;
  }

  has(id: string): boolean {
    return this.get(id) !== undefined;
  }

  /** Appends `job`, which must be in no list. */
  add(job: T): void {
    job.list = this;
    job.prev = this.#tail;
    job.next = undefined;
    if (this.#tail === undefined) this.#head = job;
    else this.#tail.next = job;
    this.#tail = job;
    this.#size += 1;
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
    this.#size -= 1;
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
