// Where enqueue → start goes, one job at a time: the latency scenario's pacing (a job every
// 50 ms, after a warm-up) on the emulator as its own process, with every driver command event
// timestamped. For each job it lists, from the enqueue call, when Loom handed the insert to the
// driver, when each command started and succeeded, and when the handler started; jobs with the
// same sequence of events are grouped and their median offsets printed (ms). Run `npm run build`
// first.
//
// usage: node bench/tools/latency-timeline.mjs [jobs=200] [ROOT]
//   ROOT: a Loom checkout (default: this one), to compare two builds.
//   EMULATOR_NODE_ARGS='--cpu-prof --cpu-prof-dir=DIR' profiles the emulator.
import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Container } from 'inversify';

const jobs = Number(process.argv[2] ?? 200);
const WT = resolve(process.argv[3] ?? fileURLToPath(new URL('../..', import.meta.url)));
const { MongoClient, Collection } = await import(`${WT}/node_modules/mongodb/lib/index.js`);
const { Loom, Job, ConsoleLogger } = await import(`${WT}/packages/core/dist/index.js`);
const { MongoStore } = await import(`${WT}/packages/mongo-store/dist/index.js`);

/** [ms since the process started, label] of the current job, in order. */
const events = [];
const mark = (label) => events.push([performance.now(), label]);
// Loom's insert of a job, as handed to the driver (insertOne for one job, insertMany for several).
for (const method of ['insertOne', 'insertMany']) {
  const original = Collection.prototype[method];
  Collection.prototype[method] = function (...args) {
    if (this.collectionName === 'loom_jobs') mark('handed to driver');
    return original.apply(this, args);
  };
}

const emulatorArgs = (process.env.EMULATOR_NODE_ARGS ?? '').split(' ').filter(Boolean);
const emulator = spawn(process.execPath, [...emulatorArgs, `${WT}/packages/mongo-emulator/dist/bin.js`, '--port', '0'], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
const uri = await new Promise((done) => createInterface({ input: emulator.stdout }).once('line', (line) => done(line.trim())));
const client = new MongoClient(uri, { monitorCommands: true });
const names = new Map();
client.on('commandStarted', (e) => {
  names.set(e.requestId, e.commandName);
  mark(`${e.commandName} sent`);
});
client.on('commandSucceeded', (e) => mark(`${names.get(e.requestId)} answered`));
await client.connect();
await client.db('timeline').dropDatabase();

let onStart = () => {};
class Timed {
  async run() {
    onStart();
  }
}
Job({ name: 'timeline', retries: 0 })(Timed);
const logger = new ConsoleLogger({ level: 'warn' });
const store = new MongoStore({ client, database: 'timeline', logger });
const loom = await Loom.create({ container: new Container(), store, jobs: [Timed], concurrency: 50, logger });
await loom.start();
for (let i = 0; i < 5; i++) await loom.enqueue(Timed, {});
await sleep(500);

const timelines = [];
const begin = performance.now();
for (let i = 0; i < jobs; i++) {
  const wait = begin + i * 50 - performance.now();
  if (wait > 0) await sleep(wait);
  events.length = 0;
  const t0 = performance.now();
  const started = new Promise((done) => (onStart = done));
  await loom.enqueue(Timed, {});
  await started;
  const at = performance.now();
  timelines.push({ labels: events.filter(([t]) => t <= at).map(([t, label]) => [label, t - t0]), total: at - t0 });
}
await loom.stop();
await store.close();
await client.close();
emulator.kill('SIGTERM');

const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
const totals = timelines.map((t) => t.total);
console.log(
  `enqueue → start over ${jobs} jobs, one every 50 ms: p50 ${median([...totals]).toFixed(2)} ms, p99 ${totals.sort((a, b) => a - b)[Math.floor(jobs * 0.99)].toFixed(2)} ms`,
);
const groups = new Map();
for (const t of timelines) {
  const key = t.labels.map(([label]) => label).join(' → ');
  groups.set(key, [...(groups.get(key) ?? []), t]);
}
for (const [, group] of [...groups].sort((a, b) => b[1].length - a[1].length).slice(0, 3)) {
  console.log(`\n${group.length} jobs:`);
  group[0].labels.forEach(([label], i) =>
    console.log(
      `  ${median(group.map((t) => t.labels[i][1]))
        .toFixed(2)
        .padStart(6)} ms  ${label}`,
    ),
  );
  console.log(
    `  ${median(group.map((t) => t.total))
      .toFixed(2)
      .padStart(6)} ms  handler started`,
  );
}
process.exit(0);
