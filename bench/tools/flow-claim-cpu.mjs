// The claim cost of flow limits in CPU and commands, beside `npm run bench -- --only flow` (which
// times claims by the wall clock, at the mercy of the machine's load): the same claims (a queue
// with no limit, a global concurrency, a rate limit, group concurrency; claims of 1 and of 10, each
// completed before the next) on the emulator as its own process, reporting per job the emulator's
// CPU (/proc/<pid>/task/*/schedstat) and this process's CPU over the claims only, and the commands
// per claim (driver command monitoring). Linux only; run `npm run build` first.
//
// usage: node bench/tools/flow-claim-cpu.mjs [ROOT] [rounds] [claims] [--prof DIR]
//   ROOT: a Loom checkout (default: this one), to compare two builds; ONLY=Plain,Rate picks variants.
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
const positional = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && all[i - 1] !== '--prof');
const WT = resolve(positional[0] ?? fileURLToPath(new URL('../..', import.meta.url)));
const rounds = Number(positional[1] ?? 3);
const claims = Number(positional[2] ?? 100);
const profDir = process.argv.indexOf('--prof') > 0 ? process.argv[process.argv.indexOf('--prof') + 1] : undefined;
const only = process.env.ONLY ? process.env.ONLY.split(',') : undefined;
const { MongoClient } = await import(`${WT}/node_modules/mongodb/lib/index.js`);
const { MongoStore } = await import(`${WT}/packages/mongo-store/dist/index.js`);
const execArgv = profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [];
const child = spawn(process.execPath, [...execArgv, `${WT}/packages/mongo-emulator/dist/bin.js`, '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
const uri = await new Promise((res) => createInterface({ input: child.stdout }).once('line', (l) => res(l.trim())));
const cpuNs = () =>
  readdirSync(`/proc/${child.pid}/task`).reduce((s, t) => s + Number(readFileSync(`/proc/${child.pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]), 0);
const selfNs = () => Number(process.cpuUsage().user + process.cpuUsage().system) * 1000;
const NAME = 'bench-flow';
const VARIANTS = [
  { key: 'Plain' },
  { key: 'Global', flow: [{ name: NAME, globalConcurrency: 1_000 }] },
  { key: 'Rate', flow: [{ name: NAME, rateLimit: { limit: 10_000, perMs: 1_000 } }] },
  { key: 'Group', flow: [{ name: NAME, group: { concurrency: 1_000 } }], keyed: true },
].filter((v) => !only || only.includes(v.key));
const client = new MongoClient(uri, { monitorCommands: true });
let cmds = 0;
let counting = false;
const byCmd = {};
client.on('commandStarted', (e) => {
  if (counting) {
    cmds++;
    byCmd[e.commandName] = (byCmd[e.commandName] ?? 0) + 1;
  }
});
await client.connect();
const logger = { info() {}, warn() {}, error() {}, debug() {} };
const med = (a) => {
  const s = [...a].sort((x, y) => x - y);
  return s[Math.floor(s.length / 2)];
};
for (const limit of [1, 10]) {
  const sides = [];
  for (const v of VARIANTS) {
    const name = `flowcpu_${v.key.toLowerCase()}_${limit}`;
    const db = client.db(name);
    await db.dropDatabase();
    const store = new MongoStore({ client, database: name, logger });
    await store.init();
    sides.push({ ...v, store, db, wall: [], cpu: [], self: [] });
  }
  const round = async (side, n, record) => {
    const now = new Date();
    await side.store.enqueue(
      Array.from({ length: n * limit }, (_, i) => ({
        name: NAME,
        queue: 'bench',
        payload: { i },
        priority: 0,
        runAt: now,
        maxAttempts: 1,
        ...(side.keyed ? { groupKey: `tenant-${i % 100}` } : {}),
      })),
      { now },
    );
    let wall = 0,
      cpu = 0,
      self = 0;
    cmds = 0;
    for (const k in byCmd) delete byCmd[k];
    for (let i = 0; i < n; i++) {
      const at = new Date();
      const req = { owner: 'bench', queues: ['bench'], names: [NAME], limit, leaseUntil: new Date(at.getTime() + 60_000), now: at };
      if (side.flow) req.flow = side.flow;
      counting = true;
      const c0 = cpuNs(),
        s0 = selfNs(),
        t0 = performance.now();
      const jobs = await side.store.claim(req);
      const t1 = performance.now(),
        c1 = cpuNs(),
        s1 = selfNs();
      counting = false;
      if (jobs.length !== limit) throw new Error(`${side.key} got ${jobs.length}`);
      wall += t1 - t0;
      cpu += c1 - c0;
      self += s1 - s0;
      await Promise.all(jobs.map((j) => side.store.complete({ jobId: j.id, token: j.lease.token }, { now: new Date() })));
    }
    if (record)
      side.cmds = `${(cmds / n).toFixed(1)} cmds/claim ${JSON.stringify(Object.fromEntries(Object.entries(byCmd).map(([k, v]) => [k, +(v / n).toFixed(2)])))}`;
    if (record) {
      side.wall.push(wall / n / limit);
      side.cpu.push(cpu / n / limit / 1000);
      side.self.push(self / n / limit / 1000);
    }
  };
  for (const side of sides) await round(side, 5, false);
  for (let r = 0; r < rounds; r++) for (const side of sides) await round(side, claims, true);
  const plain = sides.find((s) => s.key === 'Plain');
  for (const s of sides) {
    const w = med(s.wall),
      c = med(s.cpu),
      sc = med(s.self);
    const rel =
      plain && s !== plain
        ? ` (x${med(s.wall.map((x, i) => x / plain.wall[i])).toFixed(2)} wall, x${med(s.cpu.map((x, i) => x / plain.cpu[i])).toFixed(2)} emuCPU, x${med(s.self.map((x, i) => (x + s.cpu[i]) / (plain.self[i] + plain.cpu[i]))).toFixed(2)} totCPU)`
        : '';
    console.log(
      `claim of ${limit} ${s.key.padEnd(6)} wall ${w.toFixed(3)} ms/job  emuCPU ${c.toFixed(0)} us/job  clientCPU ${sc.toFixed(0)} us/job${rel} ${s.cmds}`,
    );
  }
  for (const s of sides) {
    await s.store.close();
    await s.db.dropDatabase();
  }
}
await client.close();
child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));
