import { Redis } from 'ioredis';
import { countsSince, type CommandCounts } from './command-counter.js';

/**
 * Counts every command the ioredis clients of this process send (BullMQ's Queue and Worker open
 * theirs through ioredis), by name: the Redis counterpart of the driver's command monitoring. A
 * Lua script BullMQ runs is one command (`evalsha`), as a findAndModify is one for MongoDB.
 */
export class RedisCommandCounter {
  private readonly counts = new Map<string, number>();

  constructor() {
    const counts = this.counts;
    const send = Redis.prototype.sendCommand; // eslint-disable-line @typescript-eslint/unbound-method -- called below with apply(this), on the instance
    Redis.prototype.sendCommand = function (this: Redis, ...args: Parameters<Redis['sendCommand']>) {
      const name = args[0].name;
      counts.set(name, (counts.get(name) ?? 0) + 1);
      return send.apply(this, args);
    } as Redis['sendCommand'];
  }

  snapshot(): CommandCounts {
    return Object.fromEntries(this.counts);
  }

  since(earlier: CommandCounts): CommandCounts {
    return countsSince(this.counts, earlier);
  }
}
