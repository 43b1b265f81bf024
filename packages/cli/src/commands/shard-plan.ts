import { shardPlan, type ShardPlanCommand } from '@loom/mongo-store';
import { UsageError } from '../errors.js';

/** The options of `loom shard-plan`. */
export interface ShardPlanArgs {
  database: string;
  partitions: number;
  queues: string[];
  prefix: string;
  shards?: string[];
  json: boolean;
}

/** Parses `loom shard-plan --database DB --partitions N [--queues Q,...] [--prefix P] [--shards S,...] [--json]`. */
export function parseShardPlanArgs(argv: readonly string[], env: Record<string, string | undefined>): ShardPlanArgs {
  const values = new Map<string, string>();
  let json = false;
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--json') {
      json = true;
      continue;
    }
    if (!['--database', '--partitions', '--queues', '--prefix', '--shards'].includes(arg)) throw new UsageError(`shard-plan: unknown option ${arg}`);
    const value = argv[++i];
    if (value === undefined || value.startsWith('--')) throw new UsageError(`shard-plan: ${arg} needs a value`);
    values.set(arg, value);
  }
  const database = values.get('--database') ?? env.LOOM_DATABASE;
  if (!database) throw new UsageError('shard-plan: --database DB is required (the database of the Loom store)');
  const partitions = Number(values.get('--partitions') ?? '');
  if (!Number.isInteger(partitions) || partitions < 1 || partitions > 1024)
    throw new UsageError('shard-plan: --partitions N is required, a whole number from 1 to 1024');
  const list = (v: string | undefined) =>
    v
      ?.split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
  const queues = list(values.get('--queues')) ?? ['default'];
  if (queues.length === 0) throw new UsageError('shard-plan: --queues needs at least one queue name');
  const shards = list(values.get('--shards'));
  return { database, partitions, queues, prefix: values.get('--prefix') ?? 'loom_', ...(shards && shards.length > 0 ? { shards } : {}), json };
}

function call({ db, command }: ShardPlanCommand): string {
  return `${db === 'admin' ? 'db.adminCommand' : 'app.runCommand'}(${JSON.stringify(command)});`;
}

/**
 * The mongosh script (or, with `--json`, the command list) that shards a Loom store: see
 * `shardPlan` in `@loom/mongo-store`. Without `--shards`, the script reads the shards with
 * `listShards` when it runs and puts partition p of each queue on shard p mod their number.
 */
export function renderShardPlan(args: ShardPlanArgs): string {
  const partitions = Object.fromEntries(args.queues.map((q) => [q, args.partitions]));
  const options = { database: args.database, collectionPrefix: args.prefix, partitions };
  if (args.json) return `${JSON.stringify(shardPlan({ ...options, ...(args.shards ? { shards: args.shards } : {}) }), null, 2)}\n`;
  const lines = [
    `// Shards the Loom store in database '${args.database}' (collections ${args.prefix}*): the jobs collection on { queue: 1, partition: 1 },`,
    `// ${args.partitions} partition(s) for queue(s) ${args.queues.join(', ')}, partition p of the q-th queue on shard (q + p) mod shards.`,
    `// Run it in mongosh connected to a mongos, before Loom's first start on the database or with every engine stopped,`,
    `// and give MongoStore the same counts: new MongoStore({ ..., partitions: ${JSON.stringify(partitions)} }).`,
    `// The other collections stay unsharded, on the database's primary shard (small, and each written by _id).`,
    `// dropIndexes fails harmlessly (IndexNotFound / NamespaceNotFound) on a database Loom has not used yet.`,
    `const app = db.getSiblingDB(${JSON.stringify(args.database)});`,
  ];
  if (args.shards) {
    for (const command of shardPlan({ ...options, shards: args.shards })) lines.push(call(command));
    return `${lines.join('\n')}\n`;
  }
  lines.push('const shards = db.adminCommand({ listShards: 1 }).shards.map((s) => s._id);');
  for (const command of shardPlan(options)) {
    lines.push(call(command));
    if ('split' in command.command) {
      const middle = command.command.middle as { queue: string; partition: number | null };
      const slot = args.queues.indexOf(middle.queue) + (middle.partition ?? 0);
      lines.push(
        `db.adminCommand({ moveChunk: ${JSON.stringify(command.command.split)}, find: ${JSON.stringify(middle)}, to: shards[${slot} % shards.length] });`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}
