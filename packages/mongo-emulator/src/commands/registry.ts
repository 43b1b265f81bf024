/** Every command the emulator implements; anything else is CommandNotFound (59). */
import type { CommandTable } from './context.js';
import { handshakeCommands } from './handshake.js';
import { serverInfoCommands } from './server-info.js';
import { readCommands } from './read.js';
import { writeCommands } from './write.js';
import { findAndModifyCommands } from './find-and-modify.js';
import { aggregateCommands } from './aggregate.js';
import { indexCommands } from './indexes.js';
import { collectionCommands } from './collections.js';
import { sessionCommands } from './sessions.js';
import { explainCommands } from './explain.js';
import { failPointCommands } from './fail-points.js';
import { shardingCommands } from './sharding.js';

export const commandTable: CommandTable = {
  ...handshakeCommands,
  ...serverInfoCommands,
  ...readCommands,
  ...writeCommands,
  ...findAndModifyCommands,
  findandmodify: findAndModifyCommands.findAndModify,
  ...aggregateCommands,
  ...indexCommands,
  ...collectionCommands,
  ...sessionCommands,
  ...explainCommands,
  ...failPointCommands,
  ...shardingCommands,
};
