// Emulator CPU per job lifecycle, one job at a time, through the real driver against the emulator
// (its bin): the commands MongoStore sends for one job on an idle engine, in the order of the
// latency critical path: insert -> the change stream's awaiting getMore answers with the insert
// event -> the claim (findAndModify with the claim filter, sort, hint, returnDocument 'after') ->
// the fenced completion (an ordered update of two statements: plain, and held for a parent/key).
// The change stream watches inserts with MongoStore's pipeline ($match on operationType, $project).
// Build first: npm run build
// Run: node packages/mongo-emulator/bench/job-lifecycle.mjs [jobs=2000] [rounds=3]
// The emulator runs as its own process; its CPU is read from /proc/<pid>/task/*/schedstat
// (nanoseconds, every thread), so the driver's CPU is measured apart from it (Linux only).
// EMULATOR_NODE_ARGS='--cpu-prof --cpu-prof-dir=DIR' profiles the emulator.
import { readFileSync } from 'node:fs';
import { MongoClient, ObjectId } from 'mongodb';
import { MongoStore } from '@loom/mongo-store';
import { startEmulatorProcess } from './emulator-process.mjs';

const jobsPerRound = Number(process.argv[2] ?? 2_000);
const rounds = Number(process.argv[3] ?? 3);
const server = await startEmulatorProcess();
const { uri } = server;
const serverCpuNs = server.cpuNs;

const client = new MongoClient(uri, { monitorCommands: true });
const counts = new Map();
client.on('commandStarted', (e) => counts.set(e.commandName, (counts.get(e.commandName) ?? 0) + 1));
const jobs = client.db('bench').collection('loom_jobs', { writeConcern: { w: 'majority' } });
// MongoStore's own indexes (build it too: npm run build): every write maintains them.
await new MongoStore({ client, database: 'bench' }).init();
const CLAIM_KEY = { queue: 1, name: 1, priority: -1, runAt: 1, _id: 1, claimAt: 1 }; // MongoStore's claim hint

const stream = jobs.watch([
  { $match: { operationType: 'insert' } },
  { $project: { operationType: 1, 'fullDocument._id': 1, 'fullDocument.queue': 1, 'fullDocument.runAt': 1 } },
]);
let heard;
stream.on('change', (change) => heard?.(change.fullDocument._id));
// Open the server-side cursor before the first insert (the driver opens it lazily).
await new Promise((resolve) => {
  stream.once('resumeTokenChanged', resolve);
  jobs.insertOne({ _id: new ObjectId(), warm: true });
});

async function lifecycle() {
  const now = new Date();
  const id = new ObjectId();
  const event = new Promise((resolve) => (heard = resolve));
  await jobs.insertOne({
    _id: id,
    name: 'bench-latency',
    queue: 'default',
    payload: { t0: 0 },
    status: 'queued',
    priority: 0,
    runAt: now,
    claimAt: now,
    attempt: 0,
    maxAttempts: 1,
    errors: [],
    steps: [],
    signals: [],
    createdAt: now,
    updatedAt: now,
  });
  await event;
  const token = crypto.randomUUID();
  const claimed = await jobs.findOneAndUpdate(
    { claimAt: { $lte: new Date() }, queue: { $in: ['default'] }, name: { $in: ['bench-latency'] }, status: { $in: ['queued', 'running', 'waiting'] } },
    {
      $set: {
        status: 'running',
        lease: { owner: 'bench', until: new Date(Date.now() + 30_000), token },
        claimAt: new Date(Date.now() + 30_000),
        updatedAt: new Date(),
      },
      $inc: { attempt: 1 },
      $min: { startedAt: new Date() },
      $unset: { waitingFor: '', debounceKey: '' },
    },
    { sort: { priority: -1, runAt: 1, _id: 1 }, hint: CLAIM_KEY, returnDocument: 'after' },
  );
  if (!claimed?._id.equals(id)) throw new Error('the claim did not return the job just inserted');
  const fence = { _id: id, 'lease.token': { $eq: token }, status: 'running', cancelRequestedAt: { $exists: false }, 'steps.kind': { $ne: 'enqueue' } };
  const done = new Date();
  const result = await jobs.bulkWrite(
    [
      {
        updateOne: {
          filter: { ...fence, holdForParent: { $exists: false }, holdForKey: { $exists: false } },
          update: { $set: { status: 'completed', finishedAt: done, updatedAt: done }, $unset: { lease: '', claimAt: '', result: '' } },
        },
      },
      {
        updateOne: {
          filter: { ...fence, $or: [{ holdForParent: { $exists: true } }, { holdForKey: { $exists: true } }] },
          update: { $set: { status: 'completed', updatedAt: done, heldFinishedAt: done }, $unset: { lease: '', claimAt: '', result: '' } },
        },
      },
    ],
    { ordered: true },
  );
  if (result.modifiedCount !== 1) throw new Error('the completion did not complete the job');
}

for (let i = 0; i < 200; i++) await lifecycle(); // warm-up: JIT, connections
const perJob = [];
for (let r = 0; r < rounds; r++) {
  counts.clear();
  const cpu0 = serverCpuNs();
  const t0 = performance.now();
  for (let i = 0; i < jobsPerRound; i++) await lifecycle();
  const wall = performance.now() - t0;
  const us = (serverCpuNs() - cpu0) / 1000 / jobsPerRound;
  perJob.push(us);
  const commands = [...counts].map(([name, n]) => `${name} ${(n / jobsPerRound).toFixed(2)}`).join(', ');
  console.log(`round ${r + 1}: emulator CPU ${Math.round(us)} µs/job; ${(wall / jobsPerRound).toFixed(2)} ms/job wall; commands per job: ${commands}`);
}
perJob.sort((a, b) => a - b);
console.log(
  `emulator CPU per job lifecycle: median ${Math.round(perJob[Math.floor(perJob.length / 2)])} µs, lowest ${Math.round(perJob[0])} µs (load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')})`,
);
await stream.close();
await client.close();
server.stop();
