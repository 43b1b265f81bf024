/**
 * hello / isMaster (OP_QUERY on the first message of each connection, OP_MSG afterwards). In
 * replica-set mode the server is the primary of a one-member set whose `hosts`/`me` equal the
 * address in the URI, which the driver requires before it trusts the member.
 */
import type { CommandContext, CommandSpec, CommandTable } from './context.js';
import type { Doc } from '../values.js';

export const MAX_WIRE_VERSION = 21; // MongoDB 7.0

function hello(ctx: CommandContext): Doc {
  const { engine } = ctx;
  // The handshake names the client application; failCommand's appName filter matches on it.
  const appName = ((ctx.body.client as Doc | undefined)?.application as Doc | undefined)?.name;
  if (typeof appName === 'string') engine.appNames.set(ctx.connectionId, appName);
  // A replica-set member that stepped down is a secondary of a set with no primary (see repl-state.ts).
  const primary = !engine.replicaSet || engine.repl.isPrimary || engine.sharding !== undefined;
  const reply: Doc = {
    helloOk: true,
    isWritablePrimary: primary,
    ismaster: primary,
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
  if (engine.sharding) {
    // mongos: no replica-set fields; drivers recognise it by msg 'isdbgrid'.
    reply.msg = 'isdbgrid';
  } else if (engine.replicaSet) {
    Object.assign(reply, { setName: engine.replicaSet, setVersion: 1, secondary: !primary, hosts: [engine.host] });
    // Only a primary names itself primary and reports its election (a higher electionId after
    // each step-down: drivers ignore a primary whose electionId is older than one they saw).
    if (primary) Object.assign(reply, { primary: engine.host, me: engine.host, electionId: engine.repl.electionId });
    else reply.me = engine.host;
  }
  return { ...reply, ok: 1 };
}

const HELLO_FIELDS = [
  'helloOk',
  'client',
  'compression',
  'backpressure',
  'saslSupportedMechs',
  'speculativeAuthenticate',
  'topologyVersion',
  'maxAwaitTimeMS',
  'loadBalanced',
];

const helloSpec: CommandSpec = { run: hello, fields: HELLO_FIELDS };

export const handshakeCommands: CommandTable = {
  hello: helloSpec,
  ismaster: helloSpec,
  isMaster: helloSpec,
};
