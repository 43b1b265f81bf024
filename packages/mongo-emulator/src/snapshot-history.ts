/**
 * Pre-images of documents changed while transactions are open, so each transaction reads the
 * committed state as of its start (its snapshot) rather than later commits. Entries older than
 * the oldest open transaction are dropped; with none open, nothing is kept.
 */
import type { Doc } from './values.js';

interface Change {
  ns: string;
  idKey: string;
  /** The write version that replaced `before`. */
  version: number;
  /** The document before that write (null: it did not exist). */
  before: Doc | null;
}

export class SnapshotHistory {
  private changes: Change[] = [];

  note(ns: string, idKey: string, before: Doc | null, version: number): void {
    this.changes.push({ ns, idKey, version, before });
  }

  /** For each document of `ns` changed after `version`: how it looked at `version`. */
  asOf(ns: string, version: number): Map<string, Doc | null> {
    const out = new Map<string, Doc | null>();
    for (const c of this.changes) {
      if (c.ns === ns && c.version > version && !out.has(c.idKey)) out.set(c.idKey, c.before);
    }
    return out;
  }

  changedAfter(ns: string, idKey: string, version: number): boolean {
    return this.changes.some((c) => c.version > version && c.ns === ns && c.idKey === idKey);
  }

  /** Forgets changes no open transaction can see past (`oldest` undefined: none open). */
  prune(oldest: number | undefined): void {
    if (oldest === undefined) this.changes = [];
    else if (this.changes.length > 0 && this.changes[0].version <= oldest) this.changes = this.changes.filter((c) => c.version > oldest);
  }
}
