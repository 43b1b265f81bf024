import type { StoredJob } from './stored-job.js';

/** Jobs grouped by one key (a name, a parent id), so `listJobs` filters need not scan every job. */
export class SecondaryIndex {
  readonly #groups = new Map<string, Set<StoredJob>>();

  add(key: string | undefined, job: StoredJob): void {
    if (key === undefined) return;
    let group = this.#groups.get(key);
    if (!group) this.#groups.set(key, (group = new Set()));
    group.add(job);
  }

  remove(key: string | undefined, job: StoredJob): void {
    if (key === undefined) return;
    const group = this.#groups.get(key);
    if (!group) return;
    group.delete(job);
    if (group.size === 0) this.#groups.delete(key);
  }

  get(key: string): Iterable<StoredJob> {
    return this.#groups.get(key) ?? [];
  }
}
