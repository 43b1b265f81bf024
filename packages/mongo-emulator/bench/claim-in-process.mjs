// The claim of claim-throughput.mjs run on the emulator's command dispatcher in this process: no
// socket, no BSON, so what is left is the command itself (plan, index walk, update, change event).
// Also a bare `ping` through the dispatcher. CPU from process.cpuUsage over the claim rounds only.
// Build first: npx tsc -b packages/mongo-emulator/tsconfig.json
// Run: node packages/mongo-emulator/bench/claim-in-process.mjs [documents=100000] [claims=2000]
import { randomUUID } from 'node:crypto';
import { Engine } from '../dist/engine.js';
import { Dispatcher } from '../dist/commands/dispatch.js';
import { commandTable } from '../dist/commands/registry.js';
import { systemClock } from '../dist/clock.js';

const total = Number(process.argv[2] ?? 100_000);
const claims = Number(process.argv[3] ?? 2_000);
const ROUND = 50;
const engine = new Engine({ clock: systemClock, replicaSet: 'rs0' });
const dispatcher = new Dispatcher(engine, commandTable);
const run = async (body) => {
  const reply = await dispatcher.run('bench', body, 1);
  if (reply.ok !== 1) throw new Error(JSON.stringify(reply));
  return reply;
};
const now = Date.now();
const CLAIM_KEY = { queue: 1, name: 1, priority: -1, runAt: 1, _id: 1, claimAt: 1 };
await run({
  createIndexes: 'jobs',
  indexes: [
    { key: CLAIM_KEY, name: 'loom_claim', partialFilterExpression: { claimAt: { $exists: true } } },
    { key: { status: 1, priority: -1, runAt: 1, _id: 1 }, name: 'status_1_priority_-1_runAt_1__id_1' },
    { key: { status: 1, leaseUntil: 1 }, name: 'status_1_leaseUntil_1' },
  ],
});
for (let i = 0; i < total; i += 10_000) {
  const documents = [];
  for (let j = i; j < Math.min(total, i + 10_000); j++) {
    const runAt = new Date(now + (Math.floor(j / 12) % 2 === 0 ? -1 : 1) * (j % 1000) * 1000);
    documents.push({
      _id: `job-${String(j).padStart(7, '0')}`,
      queue: ['default', 'mail', 'reports'][j % 3],
      name: ['a', 'b', 'c', 'd'][Math.floor(j / 3) % 4],
      status: 'queued',
      priority: j % 7,
      runAt,
      claimAt: runAt,
      payload: { n: j },
    });
  }
  await run({ insert: 'jobs', documents, ordered: false });
}
const lsid = { id: randomUUID() };
let txnNumber = 0;
const claimOnce = () =>
  run({
    findAndModify: 'jobs',
    query: { claimAt: { $lte: new Date(now) }, queue: { $in: ['default', 'mail'] }, name: { $in: ['a', 'b', 'c'] }, status: { $in: ['queued', 'running'] } },
    sort: { priority: -1, runAt: 1, _id: 1 },
    update: {
      $set: {
        status: 'running',
        lease: { owner: 'bench', token: randomUUID(), until: new Date(now + 30_000) },
        claimAt: new Date(now + 30_000),
        updatedAt: new Date(),
      },
      $inc: { attempt: 1 },
      $min: { startedAt: new Date() },
      $unset: { waitingFor: '' },
    },
    hint: CLAIM_KEY,
    new: true,
    lsid,
    txnNumber: ++txnNumber,
  });
let cpuUs = 0;
let claimed = 0;
for (let done = 0; done < claims;) {
  const ids = [];
  const c0 = process.cpuUsage();
  for (let i = 0; i < ROUND && done < claims; i++, done++) {
    const reply = await claimOnce();
    if (reply.value) ids.push(reply.value._id);
  }
  const c = process.cpuUsage(c0);
  cpuUs += c.user + c.system;
  claimed += ids.length;
  await run({
    update: 'jobs',
    updates: [
      {
        q: { _id: { $in: ids } },
        u: { $set: { status: 'completed', finishedAt: new Date() }, $unset: { claimAt: '', lease: '', leaseUntil: '' } },
        multi: true,
      },
    ],
  });
}
const p0 = process.cpuUsage();
for (let i = 0; i < 20_000; i++) await run({ ping: 1 });
const p = process.cpuUsage(p0);
console.log(`in process: ${Math.round(cpuUs / claims)} µs CPU/claim (${claimed}/${claims} claimed); ping ${((p.user + p.system) / 20_000).toFixed(1)} µs CPU`);
