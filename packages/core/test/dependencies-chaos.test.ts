import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, MemoryStore, type FlowNode, type JobContext, type JobStore } from '@loom/core';
import { FakeClock, crashableStore, createTestLoom, type CrashableStore, type TestLoom } from '@loom/testing';

/**
 * A DAG of 1,000 jobs run by a succession of engines on one store, each of which dies at a random
 * moment: in the middle of a run (its lease runs out, the next engine takes the job over), or just
 * as it settles the dependents of a job it completed (the next engine's periodic settle finds
 * them from the store). Every node must run only once all its dependencies have completed, and
 * every node must complete: lost 0.
 */

const NODES = Number(process.env.DAG_NODES ?? 1_000);
const MAX_DEPS = 3;
/** Engine deaths the run may spend; after that the last engine runs to the end. */
const DEATHS = 6;

/** A small deterministic generator (mulberry32), so a failure reproduces. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const rand = random(31);
const deps: number[][] = Array.from({ length: NODES }, (_, i) => {
  const count = i === 0 ? 0 : Math.floor(rand() * (MAX_DEPS + 1));
  return [...new Set(Array.from({ length: count }, () => Math.floor(rand() * i)))];
});

/** Per node: how many runs finished, and runs that started before a dependency completed. */
const finishedRuns = new Array<number>(NODES).fill(0);
const early: string[] = [];
let ids: Record<string, string> = {};
let current: CrashableStore | undefined;
let deathsLeft = DEATHS;
/** Resolves when the current engine dies: its harness calls hang from then on, like the rest of its calls. */
let died: Promise<void> = new Promise(() => {});
let onDeath: () => void = () => {};

/** Deaths by where they struck. */
const deaths = { midRun: 0, atSettle: 0 };

function maybeDie(p: number, where: keyof typeof deaths): boolean {
  if (deathsLeft === 0 || !current || current.crashed || rand() >= p) return false;
  deathsLeft -= 1;
  deaths[where] += 1;
  current.crash();
  onDeath();
  return true;
}

@Job({ name: 'dag-node', retries: 20 })
class DagNode {
  async run({ i }: { i: number }, ctx: JobContext): Promise<number> {
    const results = await ctx.dependencyResults<number>();
    const missing = deps[i]!.filter((d) => results[ids[`n${d}`]!] !== d);
    if (missing.length > 0) early.push(`n${i} ran before n${missing.join(', n')} completed`);
    if (maybeDie(0.02, 'midRun')) return new Promise<number>(() => {}); // the process is gone mid-run
    finishedRuns[i]! += 1;
    return i;
  }
}

/** The store of one engine: it can die, and it may die just as it settles dependents. */
function mortal(inner: JobStore): JobStore {
  current = crashableStore(inner);
  died = new Promise((resolve) => (onDeath = resolve));
  const store = current.store;
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop !== 'settleDependents' || typeof value !== 'function') return value;
      return (req: Parameters<JobStore['settleDependents']>[0]) => {
        if (req.jobIds !== undefined) maybeDie(0.05, 'atSettle');
        return (value as JobStore['settleDependents']).call(target, req);
      };
    },
  });
}

describe('a DAG of 1,000 jobs under engine deaths', () => {
  it('runs each node after all its dependencies and completes every one (lost 0)', async () => {
    const inner = new MemoryStore();
    const clock = new FakeClock();
    const engine = (): Promise<TestLoom> =>
      createTestLoom({
        jobs: [DagNode],
        store: mortal(inner),
        clock,
        lease: '30s',
        pollInterval: '1s',
        concurrency: 8,
        hungStoreCall: '100ms',
        realIoTimeout: '100ms',
      });

    let t = await engine();
    const nodes: Record<string, FlowNode> = {};
    deps.forEach((d, i) => (nodes[`n${i}`] = { job: DagNode, payload: { i }, dependsOn: d.map((x) => `n${x}`) }));
    ids = (await t.flows.add({ nodes })).ids;

    let engines = 1;
    for (let round = 0; round < 200; round++) {
      if (current!.crashed) {
        // The dead engine is never stopped: its calls hang, like a dead process's. The next one starts.
        t = await engine();
        engines += 1;
      }
      // A dead engine's advance never ends (its store calls hang): go on when it dies.
      await Promise.race([t.advance('31s'), died]);
      const left = await inner.listJobs({ status: ['queued', 'running', 'waiting'], limit: 1 });
      if (left.length === 0 && !current!.crashed) break;
    }

    const statuses = await Promise.all(Object.values(ids).map(async (id) => (await inner.getJob(id))?.status));
    expect(statuses.filter((s) => s !== 'completed')).toEqual([]);
    expect(early).toEqual([]);
    expect(finishedRuns.filter((n) => n === 0)).toEqual([]);
    // Both kinds of death struck (the seed is fixed, so this run is the same every time).
    expect(deaths.midRun).toBeGreaterThan(0);
    expect(deaths.atSettle).toBeGreaterThan(0);
    console.log(`DAG of ${NODES} nodes, ${deps.flat().length} edges: ${engines} engines (deaths: ${JSON.stringify(deaths)}), lost 0`);
    await t.stop();
  }, 120_000);
});
