/// <reference types="jest" />
import 'reflect-metadata';
import { Job, type BatchSummary, type FlowNode, type JobContext, type JobStore } from '@loom/core';
import { crashableStore, type CrashableStore } from './crashable-store.js';
import { FakeClock } from './fake-clock.js';
import { createTestLoom, type TestLoom } from './test-loom.js';

/**
 * Flows under process deaths, on any store: a DAG run by a succession of engines on one store, and
 * batches whose members end while engines die. Each engine dies at a random moment (fixed seed): in
 * the middle of a run (its lease runs out, the next engine takes the job over), just as it settles
 * the dependents of a job it completed, or around the write that ends a job (before it, so the job
 * runs again; or after it, so the engine is gone the moment the batch's counters moved). A dead
 * engine's store calls hang, like a dead process's; the next engine starts on the same store.
 */

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

type Death = 'midRun' | 'atSettle' | 'beforeEnd' | 'afterEnd';

/** The engines of one run and their deaths: at most `budget`, after which the last engine runs to the end. */
class Mortality {
  readonly deaths: Record<Death, number> = { midRun: 0, atSettle: 0, beforeEnd: 0, afterEnd: 0 };
  /** Jobs whose engine died around their ending write: a finished run may run again (at least once), so it is not counted as a duplicate. */
  readonly struckAtEnd = new Set<string>();
  /** Jobs whose run finished and whose ending write has not come back yet. */
  private readonly unwritten = new Set<string>();
  /** The engine (its crashable store) that claimed each job last. */
  private readonly claimedBy = new Map<string, CrashableStore>();
  current: CrashableStore | undefined;
  /**
   * No death strikes while set: the scenario is storing its work (`runToTheEnd`'s `start`), and a
   * death then would hang those store calls for good (a dead engine's calls never return), the
   * test with them; engines already run jobs meanwhile, so whether one came before the setup's end
   * depended on timing.
   */
  sparing = false;
  /** Resolves when the current engine dies: its harness calls hang from then on. */
  died: Promise<void> = new Promise(() => {});
  private onDeath: () => void = () => {};
  private left: number;
  /** Chances to die so far, by where. */
  private readonly chances: Record<Death, number> = { midRun: 0, atSettle: 0, beforeEnd: 0, afterEnd: 0 };

  constructor(
    budget: number,
    readonly rand: () => number,
    /**
     * From which chance (1-based) a death of each kind strikes for sure if none has yet: the order
     * of calls depends on timing on a real store, so chance alone might spare a kind.
     */
    private readonly forced: Partial<Record<Death, number>> = {},
  ) {
    this.left = budget;
  }

  maybeDie(p: number, where: Death): boolean {
    if (p <= 0 || this.sparing) return false;
    this.chances[where] += 1;
    if (this.left === 0 || !this.current || this.current.crashed) return false;
    const due = this.deaths[where] === 0 && this.chances[where] >= (this.forced[where] ?? Infinity);
    if (!due && this.rand() >= p) return false;
    this.left -= 1;
    this.deaths[where] += 1;
    for (const id of this.unwritten) this.struckAtEnd.add(id);
    this.unwritten.clear();
    this.current.crash();
    this.onDeath();
    return true;
  }

  /** A run of `jobId` finished: until its ending write comes back, a death makes it liable to run again. */
  finished(jobId: string): void {
    // A run that finishes in an engine already dead (it was mid-run when its engine died) never
    // gets its ending write: the job runs again, as it must.
    const engine = this.claimedBy.get(jobId);
    if (engine?.crashed) this.struckAtEnd.add(jobId);
    else this.unwritten.add(jobId);
  }

  /** The store of one new engine: it can die, mid-call where the run asks for it. */
  mortal(inner: JobStore, p: { atSettle: number; atEnd: number }): JobStore {
    const engine = crashableStore(inner);
    this.current = engine;
    this.died = new Promise((resolve) => (this.onDeath = resolve));
    const store = engine.store;
    const never = new Promise<never>(() => {});
    return new Proxy(store, {
      get: (target, prop, receiver) => {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (typeof value !== 'function') return value;
        const call = (...args: unknown[]): unknown => (value as (...a: unknown[]) => unknown).apply(target, args);
        if (prop === 'claim') {
          return async (...args: unknown[]) => {
            const claimed = (await call(...args)) as { id: string }[];
            for (const job of claimed) this.claimedBy.set(job.id, engine);
            return claimed;
          };
        }
        if (prop === 'settleDependents' && p.atSettle > 0) {
          return (req: Parameters<JobStore['settleDependents']>[0]) => {
            if (req.jobIds !== undefined) this.maybeDie(p.atSettle, 'atSettle');
            return call(req);
          };
        }
        if (prop === 'complete' || prop === 'completeMany' || prop === 'deadLetter') {
          return async (...args: unknown[]) => {
            const ids =
              prop === 'completeMany' ? (args[0] as { lease: { jobId: string } }[]).map((i) => i.lease.jobId) : [(args[0] as { jobId: string }).jobId];
            if (this.maybeDie(p.atEnd / 2, 'beforeEnd')) return never;
            const result = await call(...args);
            if (this.maybeDie(p.atEnd / 2, 'afterEnd')) return never;
            for (const id of ids) this.unwritten.delete(id);
            return result;
          };
        }
        return value;
      },
    });
  }
}

let life = new Mortality(0, random(1));

// ---- the DAG ----------------------------------------------------------------------------------

const MAX_DEPS = 3;
let deps: number[][] = [];
let ids: Record<string, string> = {};
/** Per node: runs that finished; and runs that started before a dependency completed. */
let finishedRuns: number[] = [];
let early: string[] = [];

@Job({ name: 'chaos-dag-node', retries: 20 })
export class ChaosDagNode {
  async run({ i }: { i: number }, ctx: JobContext): Promise<number> {
    const results = await ctx.dependencyResults<number>();
    const missing = deps[i]!.filter((d) => results[ids[`n${d}`]!] !== d);
    if (missing.length > 0) early.push(`n${i} ran before n${missing.join(', n')} completed`);
    if (life.maybeDie(0.02, 'midRun')) return new Promise<number>(() => {}); // the process is gone mid-run
    finishedRuns[i]! += 1;
    return i;
  }
}

// ---- the batches -------------------------------------------------------------------------------

/** Members that throw on every attempt (they end dead, so their batch fails). */
const failing = (batch: number, member: number): boolean => batch % 2 === 1 && member % 17 === 0;

// Retries enough to outlive the deaths: each engine that dies takes an attempt from every run it had.
@Job({ name: 'chaos-batch-member', retries: 20, backoff: { type: 'fixed', delay: '1s' } })
export class ChaosBatchMember {
  async run({ batch, member }: { batch: number; member: number }): Promise<number> {
    if (life.maybeDie(0.01, 'midRun')) return new Promise<number>(() => {});
    if (failing(batch, member)) throw new Error(`member ${member} of batch ${batch} fails`);
    return member;
  }
}

/** Finished runs of each callback job, by `<batch id>:<on>`, with what its ctx.batch said. */
let callbackRuns = new Map<string, { jobId: string; runs: number; summary: BatchSummary | undefined }>();

function callbackRun(on: string, ctx: JobContext): Promise<void> {
  if (life.maybeDie(0.03, 'midRun')) return new Promise<void>(() => {});
  const key = `${ctx.batch?.id}:${on}`;
  const seen = callbackRuns.get(key) ?? { jobId: ctx.jobId, runs: 0, summary: ctx.batch };
  seen.runs += 1;
  life.finished(ctx.jobId);
  callbackRuns.set(key, seen);
  return Promise.resolve();
}

@Job({ name: 'chaos-batch-done', retries: 20 })
export class ChaosBatchDone {
  run(_: unknown, ctx: JobContext): Promise<void> {
    return callbackRun('complete', ctx);
  }
}

@Job({ name: 'chaos-batch-ok', retries: 20 })
export class ChaosBatchOk {
  run(_: unknown, ctx: JobContext): Promise<void> {
    return callbackRun('success', ctx);
  }
}

@Job({ name: 'chaos-batch-failed', retries: 20 })
export class ChaosBatchFailed {
  run(_: unknown, ctx: JobContext): Promise<void> {
    return callbackRun('failure', ctx);
  }
}

const FLOW_CHAOS_JOBS = [ChaosDagNode, ChaosBatchMember, ChaosBatchDone, ChaosBatchOk, ChaosBatchFailed];

export interface FlowChaosOptions {
  /** Nodes of the DAG (default 1,000). */
  nodes?: number;
  /** Batches, and members per batch (default 20 of 50). */
  batches?: number;
  members?: number;
  /** Each test's time limit in ms (default 120 s). */
  timeoutMs?: number;
}

/**
 * Registers the flow chaos scenarios for one store: `fixture` gives each test a fresh store.
 * Used by `@loom/core` (MemoryStore) and `@loom/mongo-store` (MongoDB).
 */
export function describeFlowChaos(label: string, fixture: () => JobStore | Promise<JobStore>, options: FlowChaosOptions = {}): void {
  const nodes = options.nodes ?? 1_000;
  const batches = options.batches ?? 20;
  const members = options.members ?? 50;
  const timeoutMs = options.timeoutMs ?? 120_000;

  /** Engines one after another on `inner` until nothing is left to run; the last one, stopped. */
  async function runToTheEnd(inner: JobStore, deaths: { atSettle: number; atEnd: number }, start: (t: TestLoom) => Promise<void>): Promise<number> {
    const clock = new FakeClock();
    const engine = (): Promise<TestLoom> =>
      createTestLoom({
        jobs: FLOW_CHAOS_JOBS,
        store: life.mortal(inner, deaths),
        clock,
        lease: '30s',
        pollInterval: '1s',
        concurrency: 8,
        hungStoreCall: '100ms',
        realIoTimeout: '100ms',
      });
    let t = await engine();
    life.sparing = true;
    try {
      await start(t);
    } finally {
      life.sparing = false;
    }
    let engines = 1;
    for (let round = 0; round < 300; round++) {
      if (life.current!.crashed) {
        // The dead engine is never stopped: its calls hang, like a dead process's. The next one starts.
        t = await engine();
        engines += 1;
      }
      // A dead engine's advance never ends (its store calls hang): go on when it dies.
      await Promise.race([t.advance('31s'), life.died]);
      const left = await inner.listJobs({ status: ['queued', 'running', 'waiting'], limit: 1 });
      if (left.length === 0 && !life.current!.crashed) break;
    }
    await t.stop();
    return engines;
  }

  describe(`flows under engine deaths on ${label}`, () => {
    let opened: JobStore[] = [];
    const open = async (): Promise<JobStore> => {
      const store = await fixture();
      opened.push(store);
      return store;
    };
    afterEach(async () => {
      for (const store of opened) await store.close();
      opened = [];
    });

    it(
      `a DAG of ${nodes} jobs: each node runs after all its dependencies, and every one completes (lost 0)`,
      async () => {
        const rand = random(31);
        life = new Mortality(6, rand, { midRun: 50, atSettle: 20 });
        deps = Array.from({ length: nodes }, (_, i) => {
          const count = i === 0 ? 0 : Math.floor(rand() * (MAX_DEPS + 1));
          return [...new Set(Array.from({ length: count }, () => Math.floor(rand() * i)))];
        });
        finishedRuns = new Array<number>(nodes).fill(0);
        early = [];
        const inner = await open();
        const engines = await runToTheEnd(inner, { atSettle: 0.05, atEnd: 0 }, async (t) => {
          const flow: Record<string, FlowNode> = {};
          deps.forEach((d, i) => (flow[`n${i}`] = { job: ChaosDagNode, payload: { i }, dependsOn: d.map((x) => `n${x}`) }));
          ids = (await t.flows.add({ nodes: flow })).ids;
        });

        const statuses = await Promise.all(Object.values(ids).map(async (id) => (await inner.getJob(id))?.status));
        expect(statuses.filter((s) => s !== 'completed')).toEqual([]);
        expect(early).toEqual([]);
        expect(finishedRuns.filter((n) => n === 0)).toEqual([]);
        // Both kinds of death struck.
        expect(life.deaths.midRun).toBeGreaterThan(0);
        expect(life.deaths.atSettle).toBeGreaterThan(0);
        console.log(`${label}: DAG of ${nodes} nodes, ${deps.flat().length} edges: ${engines} engines (deaths: ${JSON.stringify(life.deaths)}), lost 0`);
      },
      timeoutMs,
    );

    it(
      `${batches} batches of ${members}: each callback is enqueued once and runs with the right counts (lost 0)`,
      async () => {
        life = new Mortality(20, random(47), { midRun: 40, beforeEnd: 10, afterEnd: 20 });
        callbackRuns = new Map();
        const inner = await open();
        const created: { id: string; batch: number; jobIds: string[] }[] = [];
        const engines = await runToTheEnd(inner, { atSettle: 0, atEnd: 0.03 }, async (t) => {
          for (let batch = 0; batch < batches; batch++) {
            const made = await t.batches.create({
              jobs: Array.from({ length: members }, (_, member) => ({ job: ChaosBatchMember, payload: { batch, member } })),
              onComplete: { job: ChaosBatchDone },
              onSuccess: { job: ChaosBatchOk },
              onFailure: { job: ChaosBatchFailed },
            });
            created.push({ id: made.id, batch, jobIds: made.jobIds });
          }
        });

        for (const { id, batch, jobIds } of created) {
          const dead = Array.from({ length: members }, (_, m) => m).filter((m) => failing(batch, m));
          const expected = { id, total: members, completed: members - dead.length, dead: dead.length, cancelled: 0 };
          expect(await inner.getBatch(id)).toMatchObject({ ...expected, pending: 0 });
          const outcome = dead.length > 0 ? 'failure' : 'success';
          const absent = dead.length > 0 ? 'success' : 'failure';
          for (const on of ['complete', outcome]) {
            const seen = callbackRuns.get(`${id}:${on}`);
            expect({ batch: id, on, ran: seen !== undefined }).toEqual({ batch: id, on, ran: true });
            expect(seen!.summary).toMatchObject(expected);
            expect([...seen!.summary!.failedJobIds].sort()).toEqual(dead.map((m) => jobIds[m]).sort());
            // Once, unless its engine died around the write that completed it (then at least once).
            if (!life.struckAtEnd.has(seen!.jobId)) expect({ batch: id, on, runs: seen!.runs }).toEqual({ batch: id, on, runs: 1 });
            expect((await inner.getJob(seen!.jobId))?.status).toBe('completed');
          }
          expect(callbackRuns.has(`${id}:${absent}`)).toBe(false);
        }
        // Each callback job was enqueued once per batch, however members' ends and deaths raced.
        for (const name of ['chaos-batch-done', 'chaos-batch-ok', 'chaos-batch-failed']) {
          const jobs = await inner.listJobs({ name, limit: 10_000 });
          expect(new Set(jobs.map((j) => j.batchCallback?.batchId)).size).toBe(jobs.length);
        }
        const left = await inner.listJobs({ status: ['queued', 'running', 'waiting'], limit: 10 });
        expect(left).toEqual([]);
        // Deaths mid-run and around ending writes both struck (each is forced if chance spared it).
        expect({ deaths: life.deaths, both: life.deaths.midRun > 0 && life.deaths.beforeEnd + life.deaths.afterEnd > 0 }).toMatchObject({ both: true });
        console.log(`${label}: ${batches} batches of ${members}: ${engines} engines (deaths: ${JSON.stringify(life.deaths)}), lost 0`);
      },
      timeoutMs,
    );
  });
}
