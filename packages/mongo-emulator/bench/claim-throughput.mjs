// CPU per claim on a large collection, through the real driver against the emulator (its bin).
// Shapes: "loom" = the MongoStore claim (partial index loom_claim {queue, name, priority:-1, runAt,
// _id, claimAt}, filter {claimAt $lte, queue $in, name $in, status $in}, hint, sort {priority:-1,
// runAt:1, _id:1}, the claim update, returnDocument 'after'); "or" = a lease-recovery claim
// ({$or: [queued & due, running & lease expired]}) on {status, priority, runAt, _id}.
// Claims go in rounds of 50 (an engine's concurrency); after each round the claimed jobs are
// completed (claimAt unset, as MongoStore does), so the claims walk past at most 50 running jobs, as
// they do in a running engine. Only the claim rounds are measured.
// Build first: npx tsc -b packages/mongo-emulator/tsconfig.json
// Run: node packages/mongo-emulator/bench/claim-throughput.mjs [documents=100000] [claims=2000] [loom|or]
// The emulator runs as its own process (its bin); its CPU is read from /proc/<pid>/task/*/schedstat
// (nanoseconds, every thread), so the driver's CPU is measured apart from it (Linux only).
import { MongoClient } from 'mongodb';
import { startEmulatorProcess } from './emulator-process.mjs';

const total = Number(process.argv[2] ?? 100_000);
const claims = Number(process.argv[3] ?? 2_000);
const shape = process.argv[4] ?? 'loom';
const ROUND = 50;
const server = await startEmulatorProcess();
const { uri } = server;
const serverCpuNs = server.cpuNs;
const client = new MongoClient(uri);
const jobs = client.db('bench').collection('jobs');
const now = Date.now();
const CLAIM_KEY = { queue: 1, name: 1, priority: -1, runAt: 1, _id: 1, claimAt: 1 };
await jobs.createIndex(CLAIM_KEY, { name: 'loom_claim', partialFilterExpression: { claimAt: { $exists: true } } });
await jobs.createIndex({ status: 1, priority: -1, runAt: 1, _id: 1 });
await jobs.createIndex({ status: 1, leaseUntil: 1 });
let t0 = performance.now();
for (let i = 0; i < total; i += 10_000) {
  const batch = [];
  for (let j = i; j < Math.min(total, i + 10_000); j++) {
    // Queue, name and due or not vary independently (no (queue, name) pair is all future jobs,
    // which every claim would walk past key by key, on mongod too). No job is running at first:
    // the jobs a round claimed are the running ones, at most 50, as in an engine.
    const runAt = new Date(now + (Math.floor(j / 12) % 2 === 0 ? -1 : 1) * (j % 1000) * 1000); // half due, half future
    const running = false;
    batch.push({
      _id: `job-${String(j).padStart(7, '0')}`,
      queue: ['default', 'mail', 'reports'][j % 3],
      name: ['a', 'b', 'c', 'd'][Math.floor(j / 3) % 4],
      status: running ? 'running' : 'queued',
      priority: j % 7,
      runAt,
      claimAt: running ? new Date(now + 60_000) : runAt,
      leaseUntil: running ? new Date(now + 60_000) : undefined,
      payload: { n: j },
    });
  }
  await jobs.insertMany(batch, { ordered: false });
}
const loadMs = performance.now() - t0;

const claimOnce =
  shape === 'or'
    ? () =>
        jobs.findOneAndUpdate(
          {
            $or: [
              { status: 'queued', runAt: { $lte: new Date(now) } },
              { status: 'running', leaseUntil: { $lt: new Date(now) } },
            ],
          },
          { $set: { status: 'running', leaseUntil: new Date(now + 30_000) }, $inc: { attempts: 1 } },
          { sort: { priority: -1, runAt: 1, _id: 1 }, returnDocument: 'after' },
        )
    : () =>
        jobs.findOneAndUpdate(
          { claimAt: { $lte: new Date(now) }, queue: { $in: ['default', 'mail'] }, name: { $in: ['a', 'b', 'c'] }, status: { $in: ['queued', 'running'] } },
          {
            $set: {
              status: 'running',
              lease: { owner: 'bench', token: crypto.randomUUID(), until: new Date(now + 30_000) },
              claimAt: new Date(now + 30_000),
              updatedAt: new Date(),
            },
            $inc: { attempt: 1 },
            $min: { startedAt: new Date() },
            $unset: { waitingFor: '' },
          },
          { sort: { priority: -1, runAt: 1, _id: 1 }, hint: CLAIM_KEY, returnDocument: 'after' },
        );
const complete = (ids) =>
  jobs.updateMany({ _id: { $in: ids } }, { $set: { status: 'completed', finishedAt: new Date() }, $unset: { claimAt: '', lease: '', leaseUntil: '' } });

t0 = performance.now();
const cpu0 = process.cpuUsage();
let serverNs = 0;
let claimed = 0;
for (let done = 0; done < claims;) {
  const ids = [];
  const before = serverCpuNs();
  for (let i = 0; i < ROUND && done < claims; i++, done++) {
    const doc = await claimOnce();
    if (doc) ids.push(doc._id);
  }
  serverNs += serverCpuNs() - before;
  claimed += ids.length;
  await complete(ids);
}
const wallMs = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
const cpuMs = (cpu.user + cpu.system) / 1000;
console.log(`shape ${shape}: loaded ${total} documents in ${(loadMs / 1000).toFixed(1)} s`);
console.log(
  `emulator CPU: ${Math.round(serverNs / 1000 / claims)} µs/claim (claim rounds only); driver CPU: ${Math.round((cpuMs * 1000) / claims)} µs/claim (completions included)`,
);
console.log(`${claimed}/${claims} claims in ${(wallMs / 1000).toFixed(2)} s with their completions (sequential, one client)`);
// The floor of any command over the wire: a bare ping (socket read and write, BSON, dispatch).
const pingNs0 = serverCpuNs();
for (let i = 0; i < 5_000; i++) await client.db('admin').command({ ping: 1 });
console.log(`ping: ${Math.round((serverCpuNs() - pingNs0) / 1000 / 5_000)} µs emulator CPU (the floor of any command over the wire)`);
await client.close();
server.stop();
