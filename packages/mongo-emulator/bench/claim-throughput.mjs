// Claim throughput on a large collection through the real driver against the emulator.
// Shapes: "loom" = the MongoStore claim (partial index {queue, priority:-1, runAt, _id, claimAt},
// filter {claimAt $lte, queue $in, name $in, status $in}, hint, sort {priority:-1, runAt:1, _id:1});
// "or" = a lease-recovery claim ({$or: [queued & due, running & lease expired]}).
// Build first: npx tsc -b packages/mongo-emulator/tsconfig.json
// Run: node packages/mongo-emulator/bench/claim-throughput.mjs [documents=100000] [claims=2000] [loom|or]
import { MongoClient } from 'mongodb';
import { MongoEmulator } from '../dist/index.js';

const total = Number(process.argv[2] ?? 100_000);
const claims = Number(process.argv[3] ?? 2_000);
const shape = process.argv[4] ?? 'loom';
const emu = await MongoEmulator.start({ port: 0 });
const client = new MongoClient(emu.uri);
const jobs = client.db('bench').collection('jobs');
const now = Date.now();
const CLAIM_KEY = { queue: 1, priority: -1, runAt: 1, _id: 1, claimAt: 1 };
await jobs.createIndex(CLAIM_KEY, { name: 'loom_claim', partialFilterExpression: { claimAt: { $exists: true } } });
await jobs.createIndex({ status: 1, priority: -1, runAt: 1, _id: 1 });
await jobs.createIndex({ status: 1, leaseUntil: 1 });
let t0 = performance.now();
for (let i = 0; i < total; i += 10_000) {
  const batch = [];
  for (let j = i; j < Math.min(total, i + 10_000); j++) {
    const runAt = new Date(now + (j % 2 === 0 ? -1 : 1) * (j % 1000) * 1000); // half due, half future
    const running = j % 10 === 0;
    batch.push({
      _id: `job-${String(j).padStart(7, '0')}`,
      queue: ['default', 'mail', 'reports'][j % 3],
      name: ['a', 'b', 'c', 'd'][j % 4],
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
          { $or: [{ status: 'queued', runAt: { $lte: new Date(now) } }, { status: 'running', leaseUntil: { $lt: new Date(now) } }] },
          { $set: { status: 'running', leaseUntil: new Date(now + 30_000) }, $inc: { attempts: 1 } },
          { sort: { priority: -1, runAt: 1, _id: 1 }, returnDocument: 'after' },
        )
    : () =>
        jobs.findOneAndUpdate(
          { claimAt: { $lte: new Date(now) }, queue: { $in: ['default', 'mail'] }, name: { $in: ['a', 'b', 'c'] }, status: { $in: ['queued', 'running'] } },
          { $set: { status: 'running', claimAt: new Date(now + 30_000), owner: 'bench' }, $inc: { attempts: 1 } },
          { sort: { priority: -1, runAt: 1, _id: 1 }, hint: CLAIM_KEY, returnDocument: 'after' },
        );

t0 = performance.now();
const cpu0 = process.cpuUsage();
let claimed = 0;
for (let i = 0; i < claims; i++) if (await claimOnce()) claimed++;
const claimMs = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
const cpuMs = (cpu.user + cpu.system) / 1000;
console.log(`shape ${shape}: loaded ${total} documents in ${(loadMs / 1000).toFixed(1)} s`);
console.log(`claim CPU (driver + emulator, one process): ${(cpuMs / claims).toFixed(2)} ms/claim => ${Math.round((claims / cpuMs) * 1000)} claims per CPU-second`);
console.log(`${claimed}/${claims} claims in ${(claimMs / 1000).toFixed(2)} s: ${Math.round((claims / claimMs) * 1000)} claims/s wall clock (sequential, one client)`);
await client.close();
await emu.stop();
