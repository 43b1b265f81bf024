// Engine overhead on MemoryStore, in CPU time (wall time is meaningless on a loaded machine).
// Build core first into any dir, then point LOOM_CORE at its index.js:
//   npx tsc -p packages/core/tsconfig.json --outDir /tmp/loomperf --tsBuildInfoFile /tmp/loomperf/.tsbuildinfo
//   LOOM_CORE=/tmp/loomperf/index.js node packages/core/bench/memory-cpu.mjs [jobs] [concurrency] [runs]
// Prints CPU µs per job of the processing phase (start -> last completion, the bench's
// "MemoryStore" figure) and an in-process enqueue -> start latency sample (idle engine, one job at a time).
// LOOM_PROFILE=FILE writes a V8 CPU profile of the processing phase of the last run only (the
// enqueues left out), for `node bench/dist/profile-summary.js FILE`. NO_LATENCY=1 skips the sample.
import 'reflect-metadata';
import { pathToFileURL } from 'node:url';
import { Container } from 'inversify';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

const core = await import(pathToFileURL(process.env.LOOM_CORE ?? new URL('../dist/index.js', import.meta.url).pathname).href);
const { Loom, MemoryStore, Job, ConsoleLogger } = core;
const [jobs = 100_000, concurrency = 50, runs = 3] = process.argv.slice(2).map(Number);
const logger = new ConsoleLogger({ level: 'warn' });

class Noop {
  async run() {}
}
Job({ name: 'perf-noop', retries: 0 })(Noop);
const probe = { onStart: () => {} };
class Probe {
  async run() {
    probe.onStart();
  }
}
Job({ name: 'perf-probe', retries: 0 })(Probe);

const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

const profileFile = process.env.LOOM_PROFILE;
const session = profileFile ? new Session() : undefined;
if (session) {
  session.connect();
  await session.post('Profiler.enable');
}

async function throughput(profile) {
  const loom = await Loom.create({ container: new Container(), store: new MemoryStore(), jobs: [Noop], concurrency, logger });
  let left = jobs;
  const done = new Promise((resolve) =>
    loom.on('job:completed', () => {
      if (--left === 0) resolve();
    }),
  );
  for (let i = 0; i < jobs; i += 1000)
    await loom.enqueueMany(
      Noop,
      Array.from({ length: Math.min(1000, jobs - i) }, (_, j) => ({ i: i + j })),
    );
  if (profile) await session.post('Profiler.start');
  const c0 = cpu();
  const t0 = performance.now();
  await loom.start();
  await done;
  const us = cpu() - c0;
  const ms = performance.now() - t0;
  if (profile) writeFileSync(profileFile, JSON.stringify((await session.post('Profiler.stop')).profile));
  await loom.stop();
  return { cpuUsPerJob: us / jobs, jobsPerCpuSec: Math.round((jobs / us) * 1e6), wallJobsPerSec: Math.round((jobs / ms) * 1000) };
}

async function latency(n = 200) {
  const loom = await Loom.create({ container: new Container(), store: new MemoryStore(), jobs: [Probe], concurrency, logger });
  await loom.start();
  const samples = [];
  for (let i = 0; i < n; i++) {
    let t0 = 0;
    const started = new Promise((resolve) => {
      probe.onStart = () => {
        samples.push(performance.now() - t0);
        resolve();
      };
    });
    t0 = performance.now();
    await loom.enqueue(Probe, {});
    await started;
    await new Promise((r) => setTimeout(r, 5));
  }
  await loom.stop();
  samples.sort((a, b) => a - b);
  return { p50Ms: +samples[Math.floor(n / 2)].toFixed(3), p99Ms: +samples[Math.floor(n * 0.99)].toFixed(3) };
}

const results = [];
for (let r = 0; r < runs; r++) results.push(await throughput(session !== undefined && r === runs - 1));
const med = (k) => results.map((x) => x[k]).sort((a, b) => a - b)[Math.floor(results.length / 2)];
console.log(
  JSON.stringify({
    runs: results,
    median: { cpuUsPerJob: +med('cpuUsPerJob').toFixed(2), jobsPerCpuSec: med('jobsPerCpuSec'), wallJobsPerSec: med('wallJobsPerSec') },
    latency: process.env.NO_LATENCY ? undefined : await latency(),
  }),
);
