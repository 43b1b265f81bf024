// What starting an engine costs against a server some way off: a TCP proxy that holds every chunk
// DELAY ms in each direction stands between a new client and the emulator (its own process), as a
// MongoDB in another zone would. Prints the medians of `MongoStore.init()` (connect included) on a
// fresh database and on one Loom has run on (a restart), with the commands each sent, and one
// `Loom.create` + `start()` on a restart. Run `npm run build` first.
//
// usage: node bench/tools/start-round-trips.mjs [DELAY=10] [RUNS=6] [ROOT]
//   ROOT: a Loom checkout (default: this one), to compare two builds.
import 'reflect-metadata';
import net from 'node:net';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Container } from 'inversify';
import { startEmulatorProcess } from '../../packages/mongo-emulator/bench/emulator-process.mjs';

const DELAY = Number(process.argv[2] ?? 10);
const RUNS = Number(process.argv[3] ?? 6);
const ROOT = resolve(process.argv[4] ?? fileURLToPath(new URL('../..', import.meta.url)));
const { Loom, Job } = await import(`${ROOT}/packages/core/dist/index.js`);
const { MongoStore } = await import(`${ROOT}/packages/mongo-store/dist/index.js`);

/** Forwards `from` to `to`, each chunk DELAY ms late (timers fire in order, so bytes stay in order). */
function delayed(from, to) {
  from.on('data', (chunk) => setTimeout(() => to.write(chunk), DELAY));
  from.on('error', () => to.destroy());
  from.on('close', () => to.destroy());
}

const emulator = await startEmulatorProcess();
const target = new URL(emulator.uri);
const proxy = net.createServer((client) => {
  const server = net.connect(Number(target.port), target.hostname);
  delayed(client, server);
  delayed(server, client);
});
await new Promise((done) => proxy.listen(0, '127.0.0.1', done));
const url = `mongodb://127.0.0.1:${proxy.address().port}/?directConnection=true`;
const quiet = { debug() {}, info() {}, warn() {}, error() {}, child: () => quiet };

/** A store on a new client through the proxy, and the names of the commands it sends. */
function storeOn(database) {
  const store = new MongoStore({ url, database, logger: quiet, clientOptions: { monitorCommands: true } });
  const sent = [];
  store.client.on('commandStarted', (e) => sent.push(e.commandName));
  return { store, sent };
}

const median = (xs) => xs.slice().sort((a, b) => a - b)[xs.length >> 1];
const inits = { fresh: [], restart: [] };
const commands = {};
for (let i = 0; i < RUNS; i++) {
  for (const kind of ['fresh', 'restart']) {
    const { store, sent } = storeOn(`start_${i}`);
    const t0 = performance.now();
    await store.init();
    inits[kind].push(performance.now() - t0);
    commands[kind] = sent.length;
    await store.close();
  }
}
console.log(`round trip ${2 * DELAY} ms, medians of ${RUNS}:`);
for (const kind of ['fresh', 'restart'])
  console.log(`  MongoStore.init() on a ${kind === 'fresh' ? 'fresh database' : 'restart'}: ${median(inits[kind]).toFixed(0)} ms, ${commands[kind]} commands`);

class Noop {
  async run() {}
}
Job({ name: 'start-round-trips-noop' })(Noop);
const { store, sent } = storeOn('start_0');
const t0 = performance.now();
const loom = await Loom.create({ container: new Container(), store, jobs: [Noop], logger: quiet });
const t1 = performance.now();
await loom.start();
const t2 = performance.now();
console.log(`  Loom.create + start() on a restart: ${(t1 - t0).toFixed(0)} + ${(t2 - t1).toFixed(0)} ms, ${sent.length} commands`);
await loom.stop();
await store.close();
proxy.close();
emulator.stop();
