import 'reflect-metadata';
import { Job, type FlowNode, type Loom } from '@loom/core';
import { totalCommands, type CommandCounts } from '../command-counter.js';
import { Countdown } from '../countdown.js';
import { NoopJob } from '../loom-jobs.js';
import { openLoomOnMongo } from '../loom-on-mongo.js';
import { processCpuMs } from '../process-cpu.js';
import type { ScenarioResult, ScenarioSpec } from '../scenario.js';

type FlowCostsSpec = Extract<ScenarioSpec, { kind: 'flow-costs' }>;

/** The callback of the measured batches (runs once per batch, after every member). */
@Job({ name: 'bench-batch-done', retries: 0 })
export class BatchDoneJob {
  async run(): Promise<void> {}
}

/** A batch handler of no-op items: what `@Job({ batch })` costs against one job at a time. */
@Job({ name: 'bench-noop-batch', retries: 0, batch: { size: 100 } })
export class NoopBatchJob {
  runBatch(items: { jobId: string }[]): unknown[] {
    return items.map(() => null);
  }
}

/** Dependencies per node of the measured DAG (node i depends on up to this many earlier nodes). */
const EDGES_PER_NODE = 4;

/** What one variant cost: commands and emulator CPU (µs) while enqueueing, then while processing; wall time of the processing. */
interface Cost {
  enqueueCommands: number;
  enqueueServerUs: number;
  processCommands: number;
  processServerUs: number;
  processMs: number;
  /** The processing's commands by name. */
  processByName: CommandCounts;
}

/** Enqueues with `enqueue` on a fresh engine, then runs it until `completions` jobs completed. */
async function cost(spec: FlowCostsSpec, completions: number, enqueue: (loom: Loom) => Promise<void>): Promise<Cost> {
  const h = await openLoomOnMongo(spec, [NoopJob, BatchDoneJob, NoopBatchJob], spec.concurrency);
  const done = new Countdown(completions, 'flow-costs completions');
  h.loom.on('job:completed', () => done.tick());
  const server = (): number => processCpuMs(spec.serverPid) ?? Number.NaN;
  const c0 = h.counter.snapshot();
  const s0 = server();
  await enqueue(h.loom);
  const enqueueCommands = totalCommands(h.counter.since(c0));
  const c1 = h.counter.snapshot();
  const s1 = server();
  const t0 = performance.now();
  await h.loom.start();
  await done.wait(spec.timeoutMs);
  const processMs = performance.now() - t0;
  const processed = h.counter.since(c1);
  const result: Cost = {
    enqueueCommands,
    enqueueServerUs: (s1 - s0) * 1000,
    processCommands: totalCommands(processed),
    processByName: processed,
    processServerUs: (server() - s1) * 1000,
    processMs,
  };
  await h.close();
  return result;
}

/** Nodes per layer of the measured DAG: a layer's nodes depend on the layer before and run side by side. */
const LAYER = 100;

/**
 * A DAG of `nodes` no-op jobs for one `flows.add`, in layers of {@link LAYER}: each node depends on
 * `perNode` nodes of the layer before (0: no edges, the same jobs unlinked).
 */
function dag(nodes: number, perNode: number): { nodes: Record<string, FlowNode>; edges: number } {
  const flow: Record<string, FlowNode> = {};
  let edges = 0;
  for (let i = 0; i < nodes; i++) {
    const layer = Math.floor(i / LAYER);
    const dependsOn = layer === 0 ? [] : Array.from({ length: perNode }, (_, k) => `n${(layer - 1) * LAYER + ((i + k * 25) % LAYER)}`);
    edges += dependsOn.length;
    flow[`n${i}`] = { job: NoopJob, payload: { i }, dependsOn };
  }
  return { nodes: flow, edges };
}

/**
 * What flows cost on MongoDB (issue 31), each against the same jobs without the feature, on a
 * fresh database each: per dependency edge (a DAG of `jobs` nodes in one `flows.add`, with and
 * without edges), per batch member (`batches.create` with an `onComplete` vs `enqueueMany`), in
 * commands and emulator CPU, at enqueue and through processing; and a batch handler's throughput
 * at size 100 against the same jobs one at a time.
 */
export async function flowCosts(spec: FlowCostsSpec): Promise<ScenarioResult> {
  const n = spec.jobs;
  const payloads = Array.from({ length: n }, (_, i) => ({ i }));
  const inChunks = async (loom: Loom, job: typeof NoopJob | typeof NoopBatchJob): Promise<void> => {
    for (let i = 0; i < n; i += 1_000) await loom.enqueueMany(job, payloads.slice(i, i + 1_000));
  };

  const flat = dag(n, 0);
  const linked = dag(n, EDGES_PER_NODE);
  const noEdges = await cost(spec, n, async (loom) => void (await loom.flows.add({ nodes: flat.nodes })));
  const withEdges = await cost(spec, n, async (loom) => void (await loom.flows.add({ nodes: linked.nodes })));
  const plain = await cost(spec, n, (loom) => inChunks(loom, NoopJob));
  const batch = await cost(spec, n + 1, async (loom) => {
    await loom.batches.create({ jobs: payloads.map((p) => ({ job: NoopJob, payload: p })), onComplete: { job: BatchDoneJob } });
  });
  const batchHandler = await cost(spec, n, (loom) => inChunks(loom, NoopBatchJob));

  const perEdge = (k: Exclude<keyof Cost, 'processByName'>): number => (withEdges[k] - noEdges[k]) / linked.edges;
  const perMember = (k: Exclude<keyof Cost, 'processByName'>): number => (batch[k] - plain[k]) / n;
  return {
    metrics: {
      flowCostEdges: linked.edges,
      flowCostEnqueueCommandsPerEdge: perEdge('enqueueCommands'),
      flowCostEnqueueServerUsPerEdge: perEdge('enqueueServerUs'),
      flowCostProcessCommandsPerEdge: perEdge('processCommands'),
      flowCostProcessServerUsPerEdge: perEdge('processServerUs'),
      flowCostEnqueueCommandsPerMember: perMember('enqueueCommands'),
      flowCostEnqueueServerUsPerMember: perMember('enqueueServerUs'),
      flowCostProcessCommandsPerMember: perMember('processCommands'),
      flowCostProcessServerUsPerMember: perMember('processServerUs'),
      flowCostSingleJobsPerSec: (n / plain.processMs) * 1000,
      flowCostDagJobsPerSec: (n / withEdges.processMs) * 1000,
      flowCostBatchMembersPerSec: (n / batch.processMs) * 1000,
      flowCostBatchHandlerJobsPerSec: (n / batchHandler.processMs) * 1000,
      flowCostSingleProcessCommandsPerJob: plain.processCommands / n,
      flowCostBatchHandlerProcessCommandsPerJob: batchHandler.processCommands / n,
    },
    notes: [
      `flow costs: DAG of ${n} nodes with ${linked.edges} edges vs none; ${n} batch members vs enqueueMany; batch handler of size 100 vs single jobs (concurrency ${spec.concurrency})`,
      `flow costs: commands per batch member through processing, by name (members minus plain jobs): ${perName(batch.processByName, plain.processByName, n)}`,
    ],
  };
}

/** `name count` pairs of what `more` sent beyond `base`, per unit of `n`, largest first. */
function perName(more: CommandCounts, base: CommandCounts, n: number): string {
  return Object.keys({ ...more, ...base })
    .map((name): [string, number] => [name, ((more[name] ?? 0) - (base[name] ?? 0)) / n])
    .filter(([, per]) => Math.abs(per) >= 0.005)
    .sort((a, b) => b[1] - a[1])
    .map(([name, per]) => `${name} ${per.toFixed(2)}`)
    .join(', ');
}
