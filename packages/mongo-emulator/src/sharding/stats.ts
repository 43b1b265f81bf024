/**
 * Per-namespace, per-shard counts of what mongos would send: each routed command (each statement
 * of a write batch) is "targeted" when it reaches one shard and "broadcast" when it reaches more
 * than one. Read by `{ loomShardStats: 1 }` and `MongoEmulator.shardStats()`.
 */
import type { Doc } from '../values.js';

type Counts = Map<string, number>;

interface NamespaceStats {
  sharded: boolean;
  targeted: Counts;
  broadcast: Counts;
  shards: Map<string, { targeted: Counts; broadcast: Counts }>;
}

/** What `loomShardStats` answers (see the README, "Sharded cluster (simulation)"). */
export interface ShardStatsReport {
  shards: string[];
  totals: { targeted: number; broadcast: number };
  namespaces: {
    ns: string;
    sharded: boolean;
    targeted: Record<string, number>;
    broadcast: Record<string, number>;
    shards: Record<string, { targeted: Record<string, number>; broadcast: Record<string, number> }>;
  }[];
}

function bump(counts: Counts, command: string, by = 1): void {
  counts.set(command, (counts.get(command) ?? 0) + by);
}

export class ShardStats {
  private readonly byNs = new Map<string, NamespaceStats>();

  constructor(private readonly shardNames: readonly string[]) {}

  /** Records one command (or write statement) sent to `shards`. */
  record(ns: string, sharded: boolean, command: string, shards: readonly string[]): void {
    if (shards.length === 0) return;
    let stats = this.byNs.get(ns);
    if (!stats) this.byNs.set(ns, (stats = { sharded, targeted: new Map(), broadcast: new Map(), shards: new Map() }));
    stats.sharded ||= sharded;
    const kind = shards.length === 1 ? 'targeted' : 'broadcast';
    bump(stats[kind], command);
    for (const shard of shards) {
      let perShard = stats.shards.get(shard);
      if (!perShard) stats.shards.set(shard, (perShard = { targeted: new Map(), broadcast: new Map() }));
      bump(perShard[kind], command);
    }
  }

  reset(): void {
    this.byNs.clear();
  }

  report(): ShardStatsReport {
    const totals = { targeted: 0, broadcast: 0 };
    const namespaces = [...this.byNs].map(([ns, s]) => {
      for (const n of s.targeted.values()) totals.targeted += n;
      for (const n of s.broadcast.values()) totals.broadcast += n;
      return {
        ns,
        sharded: s.sharded,
        targeted: Object.fromEntries(s.targeted),
        broadcast: Object.fromEntries(s.broadcast),
        shards: Object.fromEntries(
          [...s.shards].map(([shard, c]) => [shard, { targeted: Object.fromEntries(c.targeted), broadcast: Object.fromEntries(c.broadcast) }]),
        ),
      };
    });
    return { shards: [...this.shardNames], totals, namespaces };
  }

  /** The report as a command reply body. */
  reply(): Doc {
    return { ...this.report() };
  }
}
