/**
 * hello / isMaster (OP_QUERY on the first message of each connection, OP_MSG afterwards). In
 * replica-set mode the server is the primary of a one-member set whose `hosts`/`me` equal the
 * address in the URI, which the driver requires before it trusts the member.
 */
import { ObjectId } from 'bson';
import type { CommandContext, CommandSpec, CommandTable } from './context.js';
import type { Doc } from '../values.js';

export const MAX_WIRE_VERSION = 21; // MongoDB 7.0
const ELECTION_ID = new ObjectId('7fffffff0000000000000001');

function hello(ctx: CommandContext): Doc {
  const { engine } = ctx;
  // The handshake names the client application; failCommand's appName filter matches on it.
  const appName = ((ctx.body.client as Doc | undefined)?.application as Doc | undefined)?.name;
  if (typeof appName === 'string') engine.appNames.set(ctx.connectionId, appName);
  const reply: Doc = {
    helloOk: true,
    isWritablePrimary: true,
    ismaster: true,
    maxBsonObjectSize: 16 * 1024 * 1024,
    maxMessageSizeBytes: 48_000_000,
    maxWriteBatchSize: 100_000,
    localTime: new Date(),
    logicalSessionTimeoutMinutes: 30,
    connectionId: ctx.connectionId,
    minWireVersion: 0,
    maxWireVersion: MAX_WIRE_VERSION,
    readOnly: false,
  };
  if (engine.replicaSet) {
    Object.assign(reply, {
      setName: engine.replicaSet,
      setVersion: 1,
      secondary: false,
      hosts: [engine.host],
      primary: engine.host,
      me: engine.host,
      electionId: ELECTION_ID,
    });
  }
  return { ...reply, ok: 1 };
}

const HELLO_FIELDS = ['helloOk', 'client', 'compression', 'backpressure', 'saslSupportedMechs', 'speculativeAuthenticate', 'topologyVersion', 'maxAwaitTimeMS', 'loadBalanced'];

const helloSpec: CommandSpec = { run: hello, fields: HELLO_FIELDS };

export const handshakeCommands: CommandTable = {
  hello: helloSpec,
  ismaster: helloSpec,
  isMaster: helloSpec,
};
