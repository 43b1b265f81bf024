// Claim throughput on a large collection through the real driver against the emulator (its bin).
// Shapes: "loom" = the MongoStore claim (partial index {queue, priority:-1, runAt, _id, claimAt},
// filter {claimAt $lte, queue $in, name $in, status $in}, hint, sort {priority:-1, runAt:1, _id:1});
// "or" = a lease-recovery claim ({$or: [queued & due, running & lease expired]}).
// Build first: npx tsc -b packages/mongo-emulator/tsconfig.json
// Run: node packages/mongo-emulator/bench/claim-throughput.mjs [documents=100000] [claims=2000] [loom|or]
// The emulator runs as its own process (its bin), so its CPU per claim is measured apart from the
// driver's (Linux /proc accounting).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { MongoClient } from 'mongodb';

const total = Number(process.argv[2] ?? 100_000);
const claims = Number(process.argv[3] ?? 2_000);
const shape = process.argv[4] ?? 'loom';
const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const server = spawn(process.execPath, [...(process.env.EMULATOR_NODE_ARGS ?? '').split(' ').filter(Boolean), bin, '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
const uri = await new Promise((resolve) => createInterface({ input: server.stdout }).once('line', resolve));
/** CPU milliseconds the emulator process has used (utime + stime, in clock ticks of 10 ms). */
const serverCpuMs = () => {
  const fields = readFileSync(`/proc/${server.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
const client = new MongoClient(uri);
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
const server0 = serverCpuMs();
let claimed = 0;
for (let i = 0; i < claims; i++) if (await claimOnce()) claimed++;
const claimMs = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
const cpuMs = (cpu.user + cpu.system) / 1000;
const serverMs = serverCpuMs() - server0;
console.log(`shape ${shape}: loaded ${total} documents in ${(loadMs / 1000).toFixed(1)} s`);
console.log(`emulator CPU: ${(serverMs / claims).toFixed(2)} ms/claim => ${Math.round((claims / Math.max(serverMs, 1)) * 1000)} claims per emulator CPU-second; driver CPU: ${(cpuMs / claims).toFixed(2)} ms/claim`);
console.log(`${claimed}/${claims} claims in ${(claimMs / 1000).toFixed(2)} s: ${Math.round((claims / claimMs) * 1000)} claims/s wall clock (sequential, one client)`);
await client.close();
server.kill('SIGTERM');
