/** All databases and collections of one emulator, plus the database-wide write version. */
import { CommandError } from '../errors.js';
import type { Doc } from '../values.js';
import { CollectionData } from './collection.js';

const INVALID_COLLECTION = /^$|\$|\0/;

export function validateCollectionName(db: string, name: unknown): string {
  if (typeof name !== 'string' || INVALID_COLLECTION.test(name) || name.startsWith('system.')) {
    throw new CommandError('InvalidNamespace', `Invalid namespace specified '${db}.${String(name)}'`);
  }
  return name;
}

export class Catalog {
  private readonly dbs = new Map<string, Map<string, CollectionData>>();
  /** Bumped by every committed document write; transactions compare against it for conflicts. */
  version = 0;

  get(db: string, name: string): CollectionData | undefined {
    return this.dbs.get(db)?.get(name);
  }

  /** Returns the collection, creating it (as an implicit create on first write does). */
  getOrCreate(db: string, name: string, options: Doc = {}): { coll: CollectionData; created: boolean } {
    const existing = this.get(db, name);
    if (existing) return { coll: existing, created: false };
    validateCollectionName(db, name);
    let colls = this.dbs.get(db);
    if (!colls) {
      colls = new Map();
      this.dbs.set(db, colls);
    }
    const coll = new CollectionData(db, name, options);
    colls.set(name, coll);
    return { coll, created: true };
  }

  drop(db: string, name: string): boolean {
    const colls = this.dbs.get(db);
    const had = colls?.delete(name) ?? false;
    if (colls && colls.size === 0) this.dbs.delete(db);
    return had;
  }

  /** Moves a collection to a new namespace (renameCollection); the target must not exist. */
  rename(fromDb: string, from: string, toDb: string, to: string): void {
    const coll = this.get(fromDb, from);
    if (!coll) return;
    this.drop(fromDb, from);
    coll.db = toDb;
    coll.name = to;
    let colls = this.dbs.get(toDb);
    if (!colls) {
      colls = new Map();
      this.dbs.set(toDb, colls);
    }
    colls.set(to, coll);
  }

  dropDatabase(db: string): string[] {
    const names = [...(this.dbs.get(db)?.keys() ?? [])];
    this.dbs.delete(db);
    return names;
  }

  collections(db: string): CollectionData[] {
    return [...(this.dbs.get(db)?.values() ?? [])];
  }

  databases(): string[] {
    return [...this.dbs.keys()];
  }

  allCollections(): CollectionData[] {
    return [...this.dbs.values()].flatMap((m) => [...m.values()]);
  }
}
