/**
 * An in-process MongoDB wire-protocol server for tests: the official `mongodb` driver talks to
 * it unchanged.
 *
 * @example
 * ```ts
 * import { MongoEmulator } from '@loom/mongo-emulator';
 * const emu = await MongoEmulator.start({ port: 0 });
 * const client = new MongoClient(emu.uri);
 * // ...
 * await client.close();
 * await emu.stop();
 * ```
 */
export { MongoEmulator, type MongoEmulatorOptions } from './emulator.js';
export type { EmulatorClock } from './clock.js';
export type { StepDownReport } from './repl-state.js';
export { appMongo, type AppMongo, type AppMongoOptions } from './app-mongo.js';
export { MongoUriRequiredError } from './errors.js';
export type { ShardStatsReport } from './sharding/stats.js';
