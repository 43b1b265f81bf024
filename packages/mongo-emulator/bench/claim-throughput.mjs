// Claim throughput on a 100,000-document collection: the job store's findOneAndUpdate claim
// ({$or: [queued & due, running & lease expired]}, sort {priority:-1, runAt:1, _id:1}) through
// the real driver against the emulator. Build first: npx tsc -b packages/mongo-emulator/tsconfig.json
// Run: node packages/mongo-emulator/bench/claim-throughput.mjs [documents] [claims]
import { MongoClient } from 'mongodb';
import { MongoEmulator } from '../dist/index.js';

const total = Number(process.argv[2] ?? 100_000);
const claims = Number(process.argv[3] ?? 2_000);
const emu = await MongoEmulator.start({ port: 0 });
const client = new MongoClient(emu.uri);
const jobs = client.db('bench').collection('jobs');
await jobs.createIndex({ status: 1, priority: -1, runAt: 1, _id: 1 });
await jobs.createIndex({ status: 1, leaseUntil: 1 });
const now = Date.now();
let t0 = performance.now();
for (let i = 0; i < total; i += 10_000) {
  const batch = [];
  for (let j = i; j < Math.min(total, i + 10_000); j++) {
    batch.push({
      _id: `job-${String(j).padStart(7, '0')}`,
      status: j % 10 === 0 ? 'running' : 'queued',
      priority: j % 7,
      // half due, half in the future: the claim must skip the future ones by index order
      runAt: new Date(now + (j % 2 === 0 ? -1 : 1) * (j % 1000) * 1000),
      leaseUntil: j % 10 === 0 ? new Date(now + 60_000) : undefined,
      payload: { n: j },
    });
  }
  await jobs.insertMany(batch, { ordered: false });
}
const loadMs = performance.now() - t0;
const claimFilter = () => ({
  $or: [
    { status: 'queued', runAt: { $lte: new Date(now) } },
    { status: 'running', leaseUntil: { $lt: new Date(now) } },
  ],
});
t0 = performance.now();
const cpu0 = process.cpuUsage();
let claimed = 0;
for (let i = 0; i < claims; i++) {
  const doc = await jobs.findOneAndUpdate(
    claimFilter(),
    { $set: { status: 'running', leaseUntil: new Date(now + 30_000), owner: 'bench' }, $inc: { attempts: 1 } },
    { sort: { priority: -1, runAt: 1, _id: 1 }, returnDocument: 'after' },
  );
  if (doc) claimed++;
}
const claimMs = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
const cpuMs = (cpu.user + cpu.system) / 1000;
console.log(`loaded ${total} documents in ${(loadMs / 1000).toFixed(1)} s`);
console.log(`claim CPU (driver + emulator, one process): ${(cpuMs / claims).toFixed(2)} ms/claim => ${Math.round((claims / cpuMs) * 1000)} claims per CPU-second`);
console.log(`${claimed}/${claims} claims in ${(claimMs / 1000).toFixed(2)} s: ${Math.round((claims / claimMs) * 1000)} claims/s (sequential, one client)`);
await client.close();
await emu.stop();
