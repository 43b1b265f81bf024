/** ping, buildInfo, serverStatus and the small introspection commands common tools send. */
import { Long } from 'bson';
import { CommandError, notImplemented } from '../errors.js';
import type { CommandContext, CommandTable } from './context.js';
import type { Doc } from '../values.js';

export const EMULATED_VERSION = '7.0.0';

function buildInfo(): Doc {
  return {
    version: EMULATED_VERSION,
    gitVersion: 'loom-mongo-emulator',
    versionArray: [7, 0, 0, 0],
    bits: 64,
    debug: false,
    maxBsonObjectSize: 16 * 1024 * 1024,
    storageEngines: ['ephemeralForTest'],
    modules: [],
    javascriptEngine: 'none',
    ok: 1,
  };
}

function serverStatus(ctx: CommandContext): Doc {
  const { engine } = ctx;
  const uptimeMs = Date.now() - engine.startedAt.getTime();
  const status: Doc = {
    host: engine.host,
    version: EMULATED_VERSION,
    process: 'loom-mongo-emulator',
    pid: Long.fromNumber(process.pid),
    uptime: Math.floor(uptimeMs / 1000),
    uptimeMillis: Long.fromNumber(uptimeMs),
    uptimeEstimate: Long.fromNumber(Math.floor(uptimeMs / 1000)),
    localTime: new Date(),
    connections: { current: 0, available: 1000, totalCreated: 0 },
    opcounters: { ...engine.opCounters },
    storageEngine: { name: 'ephemeralForTest', supportsCommittedReads: true, persistent: false },
    metrics: { cursor: { open: { total: Long.fromNumber(engine.cursors.size) } } },
    ok: 1,
  };
  if (engine.replicaSet) {
    const primary = engine.repl.isPrimary;
    status.repl = { setName: engine.replicaSet, isWritablePrimary: primary, secondary: !primary, hosts: [engine.host], me: engine.host };
    if (primary) (status.repl as Doc).primary = engine.host;
  }
  return status;
}

function getParameter(ctx: CommandContext): Doc {
  const wanted = Object.keys(ctx.body).filter((k) => !k.startsWith('$') && k !== 'getParameter' && k !== 'lsid');
  const known: Doc = { featureCompatibilityVersion: { version: '7.0' } };
  const reply: Doc = {};
  for (const name of wanted) {
    if (!(name in known)) throw notImplemented(`getParameter '${name}'`);
    reply[name] = known[name];
  }
  return { ...reply, ok: 1 };
}

/**
 * `{ replSetStepDown: <seconds>, secondaryCatchUpPeriodSecs?, force? }`: steps down for that many
 * seconds (see repl-state.ts), then is primary again. mongod steps down only once an electable
 * secondary has caught up; a one-member set has none, so, as there, only `force: true` steps it
 * down (mongod first waits secondaryCatchUpPeriodSecs, default 10, and then fails with
 * ExceededTimeLimit; the emulator fails at once). It answers before it steps down.
 */
function replSetStepDown(ctx: CommandContext): Doc {
  const { engine, body } = ctx;
  if (!engine.replicaSet) throw new CommandError('NoReplicationEnabled', 'not running with --replSet');
  const seconds = body.replSetStepDown;
  if (typeof seconds !== 'number' || !Number.isFinite(seconds))
    throw new CommandError('TypeMismatch', "BSON field 'replSetStepDown' must be a number of seconds");
  if (seconds <= 0) throw new CommandError('BadValue', 'Must specify a positive number of seconds for stepDownSecs');
  const catchUp = body.secondaryCatchUpPeriodSecs ?? 10;
  if (typeof catchUp !== 'number' || catchUp < 0) throw new CommandError('BadValue', 'secondaryCatchUpPeriodSecs must be a non-negative number');
  if (catchUp > seconds) throw new CommandError('BadValue', `stepdown period must be longer than secondaryCatchUpPeriodSecs (${catchUp} > ${seconds})`);
  if (!engine.repl.isPrimary) throw new CommandError(10107, "not primary so can't step down");
  if (body.force !== true) {
    throw new CommandError(
      262,
      'No electable secondaries caught up as of the stepdown deadline. Please use the replSetStepDown command with the argument {force: true} to force node to step down.',
    );
  }
  // After the reply: the command's own connection sees ok: 1, as on mongod 4.2+.
  setImmediate(() => void engine.stepDown(seconds * 1000));
  return { ok: 1 };
}

export const serverInfoCommands: CommandTable = {
  ping: { run: () => ({ ok: 1 }), fields: [] },
  buildInfo: { run: buildInfo, fields: [] },
  buildinfo: { run: buildInfo, fields: [] },
  serverStatus: { run: serverStatus, fields: ['repl', 'metrics', 'locks', 'opcounters', 'wiredTiger', 'tcmalloc', 'sharding', 'mirroredReads'] },
  hostInfo: {
    run: () => ({
      system: { currentTime: new Date(), hostname: '127.0.0.1', cpuArch: process.arch, numCores: 1 },
      os: { type: process.platform },
      extra: {},
      ok: 1,
    }),
    fields: [],
  },
  whatsmyuri: { run: () => ({ you: '127.0.0.1:0', ok: 1 }), fields: [] },
  connectionStatus: {
    run: () => ({ authInfo: { authenticatedUsers: [], authenticatedUserRoles: [] }, ok: 1 }),
    fields: ['showPrivileges'],
  },
  getParameter: {
    run: getParameter,
    fields: ['featureCompatibilityVersion'],
    unsupported: [],
  },
  replSetGetStatus: {
    run: (ctx) => {
      if (!ctx.engine.replicaSet) throw new CommandError('NoReplicationEnabled', 'not running with --replSet');
      const state = ctx.engine.repl.isPrimary ? 1 : 2;
      const stateStr = state === 1 ? 'PRIMARY' : 'SECONDARY';
      return {
        set: ctx.engine.replicaSet,
        date: new Date(),
        myState: state,
        members: [{ _id: 0, name: ctx.engine.host, health: 1, state, stateStr, self: true }],
        ok: 1,
      };
    },
    fields: [],
    adminOnly: true,
  },
  replSetStepDown: { run: replSetStepDown, fields: ['secondaryCatchUpPeriodSecs', 'force'], adminOnly: true },
  getCmdLineOpts: { run: () => ({ argv: ['loom-mongo-emulator'], parsed: {}, ok: 1 }), fields: [], adminOnly: true },
};
