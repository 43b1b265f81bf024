/**
 * What mongos does with each command on a simulated sharded cluster: it refuses what mongos (or
 * the shards behind it) refuses on a sharded collection, and counts which shards each command
 * would reach (see stats.ts). Commands then run on the emulator's one store as usual.
 */
import { Long } from 'bson';
import { CommandError } from '../errors.js';
import { parseIndexSpec } from '../storage/index-spec.js';
import { formatDoc, isPlainObject, type Doc } from '../values.js';
import type { CommandContext } from '../commands/context.js';
import type { ShardedCluster, ShardedCollection } from './cluster.js';
import { hasFullKeyEquality, isExactIdQuery, targetRanges } from './targeting.js';

/** Databases mongos answers itself (or that live on the config servers): not counted. */
const INTERNAL_DBS = new Set(['admin', 'config', 'local']);

interface Target {
  ns: string;
  sharded: boolean;
  shards: string[];
}

export class ShardRouter {
  /** Where each open cursor's getMores go (the shards its first batch came from). */
  private readonly cursorTargets = new Map<number, Target>();
  /** Per update/delete command (its body): the statements mongos could not target. */
  private readonly statementRefusals = new WeakMap<Doc, (CommandError | undefined)[]>();

  constructor(readonly cluster: ShardedCluster) {}

  /**
   * Applies mongos's rules to a command and counts where it goes. Returns what to do with the
   * reply (remember a cursor's shards, forget a dropped collection's sharding), if anything.
   */
  route(ctx: CommandContext): ((reply: Doc) => void) | undefined {
    const { name, body, db } = ctx;
    if (name === 'getMore') return this.routeGetMore(ctx);
    if (name === 'killCursors') {
      if (Array.isArray(body.cursors)) for (const id of body.cursors) this.cursorTargets.delete(cursorId(id));
      return undefined;
    }
    if (name === 'dropDatabase') {
      return (reply) => {
        if (reply.ok === 1) this.cluster.forgetDatabase(db);
      };
    }
    if (INTERNAL_DBS.has(db)) return undefined;
    const collName = body[name];
    if (name === 'aggregate' && collName === 1) return this.routeDatabaseAggregate(ctx);
    if (typeof collName !== 'string') return undefined;
    const ns = `${db}.${collName}`;
    const coll = this.cluster.get(ns);
    switch (name) {
      case 'find':
      case 'count':
      case 'distinct':
        return this.cursorAfter(this.count(ns, coll, name, coll ? this.shardsForFilter(coll, docOr(body.filter ?? body.query)) : undefined));
      case 'aggregate':
        return this.cursorAfter(this.count(ns, coll, name, this.aggregateShards(coll, body.pipeline)));
      case 'insert':
        for (const doc of Array.isArray(body.documents) ? body.documents : []) {
          this.count(ns, coll, name, coll && isPlainObject(doc) ? [this.cluster.shardOf(coll, coll.key.tupleOf(doc))] : undefined);
        }
        return undefined;
      case 'update':
      case 'delete':
        this.routeStatements(ctx, ns, coll, name === 'update' ? body.updates : body.deletes);
        return undefined;
      case 'findAndModify':
      case 'findandmodify':
        this.count(ns, coll, 'findAndModify', coll ? this.findAndModifyShards(coll, docOr(body.query), body.upsert === true) : undefined);
        return undefined;
      case 'createIndexes':
        if (coll) this.checkUniqueIndexes(coll, body.indexes);
        this.count(ns, coll, name);
        return undefined;
      case 'dropIndexes':
      case 'collMod':
        this.count(ns, coll, name);
        return undefined;
      case 'listIndexes':
        return this.cursorAfter(this.count(ns, coll, name, [this.cluster.primaryOf(db)]));
      case 'drop':
        this.count(ns, coll, name);
        return (reply) => {
          if (reply.ok === 1) this.cluster.forget(ns);
        };
      default:
        return undefined;
    }
  }

  /**
   * Throws the targeting refusal of statement `index` of this update or delete, if any: it
   * becomes that statement's write error, as mongos reports it (see routeStatements).
   */
  refuseStatement(ctx: CommandContext, index: number): void {
    const refusal = this.statementRefusals.get(ctx.body)?.[index];
    if (refusal) throw refusal;
  }

  /**
   * Targets each statement of an update or delete. A statement mongos cannot target is not sent:
   * its refusal is kept for refuseStatement, and (ordered batch) the statements after it are not
   * sent either, so they are not counted.
   */
  private routeStatements(ctx: CommandContext, ns: string, coll: ShardedCollection | undefined, list: unknown): void {
    const ordered = ctx.body.ordered !== false;
    const refusals: (CommandError | undefined)[] = [];
    const statements: unknown[] = Array.isArray(list) ? list : [];
    for (let i = 0; i < statements.length; i++) {
      const stmt = statements[i];
      if (!isPlainObject(stmt)) continue;
      let shards: string[] | undefined;
      if (coll) {
        try {
          const single = ctx.name === 'update' ? stmt.multi !== true : stmt.limit === 1;
          shards = this.singleWriteShards(coll, ctx.name as 'update' | 'delete', docOr(stmt.q), single, ctx.name === 'update' && stmt.upsert === true, stmt);
        } catch (err) {
          refusals[i] = err as CommandError;
          if (ordered) break;
          continue;
        }
      }
      this.count(ns, coll, ctx.name, shards);
    }
    if (refusals.length > 0) this.statementRefusals.set(ctx.body, refusals);
  }

  /**
   * mongod's check on an update that changes a document's shard key (UpdateStage::
   * checkUpdateChangesShardKeyFields): not in a multi-update; only in a transaction or a
   * retryable write; and before 7.1 only with the full shard key in the query.
   */
  checkShardKeyUpdate(ctx: CommandContext, ns: string, query: Doc, before: Doc, after: Doc, multi: boolean): void {
    const coll = this.cluster.get(ns);
    if (!coll || coll.key.sameKey(before, after)) return;
    if (multi) throw new CommandError('InvalidOptions', 'Multi-update operations are not allowed when updating the shard key field.');
    if (!ctx.txn && ctx.body.txnNumber === undefined) {
      throw new CommandError('IllegalOperation', 'Must run update to shard key field in a multi-statement transaction or with retryWrites: true.');
    }
    if (!this.cluster.writesWithoutShardKey && !hasFullKeyEquality(coll.key, query)) {
      throw new CommandError('Location31025', 'Shard key update is not allowed without specifying the full shard key in the query');
    }
  }

  /** Counts one command sent to `shards`: by default every shard for a sharded collection, else the primary shard. */
  private count(ns: string, coll: ShardedCollection | undefined, command: string, shards?: string[]): Target {
    const target: Target = {
      ns,
      sharded: coll !== undefined,
      shards: shards ?? (coll ? this.cluster.allShards() : [this.cluster.primaryOf(ns.slice(0, ns.indexOf('.')))]),
    };
    this.cluster.stats.record(ns, target.sharded, command, target.shards);
    return target;
  }

  private cursorAfter(target: Target): (reply: Doc) => void {
    return (reply) => {
      const cursor = reply.cursor as Doc | undefined;
      const id = cursor ? cursorId(cursor.id) : 0;
      if (id !== 0) this.cursorTargets.set(id, target);
    };
  }

  private routeGetMore(ctx: CommandContext): ((reply: Doc) => void) | undefined {
    const id = cursorId(ctx.body.getMore);
    const target = this.cursorTargets.get(id);
    if (!target) return undefined;
    this.cluster.stats.record(target.ns, target.sharded, 'getMore', target.shards);
    return (reply) => {
      const cursor = reply.cursor as Doc | undefined;
      if (reply.ok !== 1 || !cursor || cursorId(cursor.id) === 0) this.cursorTargets.delete(id);
    };
  }

  /** A database or cluster change stream: every shard, as mongos merges them all. */
  private routeDatabaseAggregate(ctx: CommandContext): ((reply: Doc) => void) | undefined {
    const first: unknown = Array.isArray(ctx.body.pipeline) ? ctx.body.pipeline[0] : undefined;
    if (!isPlainObject(first) || !('$changeStream' in first)) return undefined;
    const target: Target = { ns: ctx.db, sharded: true, shards: this.cluster.allShards() };
    this.cluster.stats.record(target.ns, true, 'aggregate', target.shards);
    return this.cursorAfter(target);
  }

  private shardsForFilter(coll: ShardedCollection, filter: Doc): string[] {
    return this.cluster.shardsFor(coll, targetRanges(coll.key, filter));
  }

  /** Change streams reach every shard; a leading `$match` targets like a find; else all shards. */
  private aggregateShards(coll: ShardedCollection | undefined, pipeline: unknown): string[] | undefined {
    const first: unknown = Array.isArray(pipeline) ? pipeline[0] : undefined;
    if (isPlainObject(first) && '$changeStream' in first) return this.cluster.allShards();
    if (!coll) return undefined;
    return isPlainObject(first) && isPlainObject(first.$match) ? this.shardsForFilter(coll, first.$match) : this.cluster.allShards();
  }

  /**
   * An update or delete statement. A single-document one (multi: false, limit: 1) must reach one
   * shard or be an exact `_id` query before 7.1; from 7.1 on it may broadcast (mongos's
   * "write without shard key"). An upsert needs the full shard key in every version.
   */
  private singleWriteShards(coll: ShardedCollection, kind: 'update' | 'delete', filter: Doc, single: boolean, upsert: boolean, stmt: Doc): string[] {
    const shards = this.shardsForFilter(coll, filter);
    if (!single) return shards;
    if (upsert && !hasFullKeyEquality(coll.key, filter)) {
      throw new CommandError(
        'ShardKeyNotFound',
        `Failed to target upsert by query :: could not extract exact shard key from ${formatDoc(filter)} for shard key pattern ${formatDoc(coll.key.pattern)}`,
      );
    }
    if (shards.length === 1 || this.cluster.writesWithoutShardKey || isExactIdQuery(filter)) return shards;
    const which = kind === 'update' ? 'update' : 'delete';
    throw new CommandError(
      'ShardKeyNotFound',
      `A single ${which} on a sharded collection must contain an exact match on _id (and have the collection default collation) or contain the shard key (and have the simple collation). ${kind === 'update' ? 'Update' : 'Delete'} request: ${formatDoc(stmt)}, shard key pattern: ${formatDoc(coll.key.pattern)}`,
    );
  }

  /** findAndModify: one shard (SERVER-44422: a partial key reaching one shard will do), or from 7.1 a broadcast. */
  private findAndModifyShards(coll: ShardedCollection, query: Doc, upsert: boolean): string[] {
    const shards = this.shardsForFilter(coll, query);
    if (upsert && !hasFullKeyEquality(coll.key, query)) {
      throw new CommandError('ShardKeyNotFound', 'Query for sharded findAndModify must contain the shard key');
    }
    if (shards.length === 1 || this.cluster.writesWithoutShardKey) return shards;
    throw new CommandError('ShardKeyNotFound', 'Query for sharded findAndModify must contain the shard key');
  }

  /** A unique index on a sharded collection must start with the shard key (or with `_id`). */
  private checkUniqueIndexes(coll: ShardedCollection, indexes: unknown): void {
    for (const raw of Array.isArray(indexes) ? indexes : []) {
      if (!isPlainObject(raw) || raw.unique !== true || !isPlainObject(raw.key)) continue;
      parseIndexSpec(raw);
      if (!coll.key.allowsUniqueIndex(raw.key)) {
        throw new CommandError(
          'CannotCreateIndex',
          `cannot create unique index over ${formatDoc(raw.key)} with shard key pattern ${formatDoc(coll.key.pattern)}`,
        );
      }
    }
  }
}

function docOr(v: unknown): Doc {
  return isPlainObject(v) ? v : {};
}

function cursorId(raw: unknown): number {
  return raw instanceof Long ? raw.toNumber() : Number(raw);
}
