import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { MongoClient } from 'mongodb';
import { MongoStore } from '@loom/mongo-store';
import type { NewJob } from '@loom/core';
import { benchLogger } from '../loom-jobs.js';
import { ServerCpu } from '../process-cpu.js';
import { scalingJobName } from '../scaling-jobs.js';
import type { ScalingEngineMessage } from '../scaling-engine.js';
import type { ScenarioResult, ScenarioSpec } from '../scenario.js';
import { stopEngines } from './flow-limits.js';

type ScalingSpec = Extract<ScenarioSpec, { kind: 'scaling' }>;

const ENGINE = fileURLToPath(new URL('../scaling-engine.js', import.meta.url));

/** The backlog: `jobs` no-op jobs spread evenly (round robin) over `queues` job names and queues, due now. */
async function enqueueBacklog(spec: ScalingSpec): Promise<void> {
  const store = new MongoStore({ url: spec.uri, database: spec.db, logger: benchLogger });
  await store.init();
  const now = new Date();
  for (let done = 0; done < spec.jobs; done += 1_000) {
    const jobs = Array.from({ length: Math.min(1_000, spec.jobs - done) }, (_, k): NewJob => {
      const i = done + k;
      return { ...scalingJobName(i % spec.queues), payload: { i }, priority: 0, runAt: now, maxAttempts: 1 };
    });
    await store.enqueue(jobs, { now });
  }
  await store.close();
}

interface Engine {
  child: ChildProcess;
  completed: number;
  cpuMs: number;
}

/**
 * One point of the scaling curves for Loom: `jobs` no-op jobs enqueued first (one shared backlog),
 * then `engines` engine processes (each of concurrency `concurrency`, serving `queues` queues) told
 * to start at once; throughput from "go" to the last completion, worker CPU summed over the engine
 * processes (each measures its own from "go"), server CPU (the emulator's) over the same window.
 * Engine start-up (connecting, indexes) is outside the window.
 */
export async function scalingPoint(spec: ScalingSpec): Promise<ScenarioResult> {
  const client = new MongoClient(spec.uri);
  await client.connect();
  await client.db(spec.db).dropDatabase();
  await enqueueBacklog(spec);
  const args = [spec.uri, spec.db, String(spec.concurrency), String(spec.queues)];
  let finished: () => void = () => {};
  const allDone = new Promise<void>((resolve) => (finished = resolve));
  const engines: Engine[] = [];
  const total = (): number => engines.reduce((sum, e) => sum + e.completed, 0);
  await Promise.all(
    Array.from({ length: spec.engines }, () => {
      const engine: Engine = { child: fork(ENGINE, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }), completed: 0, cpuMs: 0 };
      engines.push(engine);
      return new Promise<void>((resolve, reject) => {
        engine.child.on('message', (m: ScalingEngineMessage) => {
          if (m.t === 'ready') return resolve();
          engine.completed = m.completed;
          engine.cpuMs = m.cpuMs;
          if (total() >= spec.jobs) finished();
        });
        engine.child.once('exit', (code) => reject(new Error(`a scaling engine exited (${code}) before it was ready`)));
      });
    }),
  );
  const server = new ServerCpu(spec.serverPid);
  const t0 = performance.now();
  for (const e of engines) e.child.send({ t: 'go' });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`scaling: only ${total()} of ${spec.jobs} completions after ${spec.timeoutMs} ms`)), spec.timeoutMs);
  });
  try {
    await Promise.race([allDone, timeout]);
  } finally {
    clearTimeout(timer);
  }
  const ms = performance.now() - t0;
  const serverCpu = server.perJob(spec.jobs);
  await stopEngines(engines.map((e) => e.child));
  await client.db(spec.db).dropDatabase();
  await client.close();
  const workerCpuMs = engines.reduce((sum, e) => sum + e.cpuMs, 0);
  return {
    metrics: {
      throughputJobsPerSec: (spec.jobs / ms) * 1000,
      workerCpuUsPerJob: (workerCpuMs * 1000) / spec.jobs,
      ...serverCpu,
    },
  };
}
