/**
 * The main module of a sandbox runner: a worker thread (`new Worker(thread-entry.js)`) or, for a
 * job with `resourceLimits`, a child process (`fork(thread-entry.js)`). It loads the user's sandbox
 * module, builds the job classes' container with its default export, says `ready`, then runs one
 * job at a time as the engine asks, its `ctx` a {@link ThreadContext} whose durable calls go to the
 * engine. Nothing here touches the store: the engine's thread keeps it.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { JobClass, RunHandler } from '../jobs/job-class.js';
import { decoratedJobClasses, readJobOptions } from '../jobs/job-metadata.js';
import { SandboxModuleError } from '../support/errors.js';
import { ThreadContext } from './thread-context.js';
import { findCloneProblem, fromWire, toWire, type BridgeMethod, type FromThread, type ThreadData, type ToThread, type WireJob } from './wire.js';
import { NotCloneableError } from '../support/errors.js';

/** What the sandbox module's default export may build: an inversify container, or a resolve function. */
type InstanceSource = { isBound(c: unknown): boolean; bind(c: unknown): { toSelf(): { inSingletonScope(): unknown } }; getAsync(c: unknown): Promise<unknown> };
type Resolve = (jobClass: JobClass) => RunHandler | Promise<RunHandler>;

/** The engine, over the thread's port or the child process's IPC channel. */
interface EngineLink {
  data: ThreadData;
  post(message: FromThread): void;
  listen(listener: (message: ToThread) => void): void;
}

function engineLink(): EngineLink {
  const port = parentPort;
  if (port) return { data: workerData as ThreadData, post: (m) => port.postMessage(m), listen: (l) => port.on('message', l) };
  const send = process.send?.bind(process);
  if (!send) throw new Error('thread-entry.js runs in a Loom sandbox thread or process, not on its own');
  // The engine is gone (stopped, killed): a child left behind would hold its memory for nothing.
  process.on('disconnect', () => process.exit(0));
  return {
    data: JSON.parse(process.argv[2] ?? '{}') as ThreadData,
    post: (m) => {
      send(m);
    },
    listen: (l) => process.on('message', (m) => l(m as ToThread)),
  };
}

const link = engineLink();
const { moduleHref } = link.data;

/** Marks the rejection a durable wait gets when the engine parked the run: the handler must not go on. */
class Suspended extends Error {
  constructor() {
    super('The run suspended (a durable sleep or wait); this is not a failure. Do not catch it in a handler.');
    this.name = 'RunSuspension';
  }
}

interface CurrentRun {
  runId: number;
  ctx: ThreadContext;
  calls: Map<number, { resolve(v: unknown): void; reject(e: Error): void }>;
  suspended: Suspended | undefined;
}

let current: CurrentRun | undefined;
let nextCall = 0;
const instances = new Map<string, RunHandler>();

function post(message: FromThread): void {
  link.post(message);
}

async function loadSource(): Promise<InstanceSource | Resolve> {
  let mod: { default?: unknown };
  try {
    mod = (await import(moduleHref)) as { default?: unknown };
  } catch (err) {
    throw new SandboxModuleError(moduleHref, `failed to load: ${(err as Error)?.message ?? String(err)}`);
  }
  if (typeof mod.default !== 'function') throw new SandboxModuleError(moduleHref, 'has no default export function');
  const built = (await (mod.default as () => unknown)()) as unknown;
  if (typeof built === 'function') return built as Resolve;
  if (typeof built === 'object' && built !== null && typeof (built as InstanceSource).getAsync === 'function') return built as InstanceSource;
  throw new SandboxModuleError(moduleHref, 'default export returned neither an inversify Container nor a function (jobClass) => instance');
}

async function instanceFor(source: InstanceSource | Resolve, name: string): Promise<RunHandler> {
  const known = instances.get(name);
  if (known) return known;
  const jobClass = decoratedJobClasses().find((c) => (readJobOptions(c)?.name?.trim() || c.name) === name);
  if (!jobClass) throw new SandboxModuleError(moduleHref, `does not load the @Job class of job "${name}" (import it from the module)`);
  let instance: RunHandler;
  if (typeof source === 'function') instance = await source(jobClass);
  else {
    if (!source.isBound(jobClass)) source.bind(jobClass).toSelf().inSingletonScope();
    instance = (await source.getAsync(jobClass)) as RunHandler;
  }
  if (typeof instance?.run !== 'function') throw new SandboxModuleError(moduleHref, `built the job "${name}" as something without a run method`);
  instances.set(name, instance);
  return instance;
}

function call(run: CurrentRun, method: BridgeMethod, args: unknown[]): Promise<unknown> {
  if (run.suspended) return Promise.reject(run.suspended);
  const callId = ++nextCall;
  return new Promise((resolve, reject) => {
    run.calls.set(callId, { resolve, reject });
    try {
      post({ t: 'call', runId: run.runId, callId, method, args });
    } catch (err) {
      run.calls.delete(callId);
      const problem = findCloneProblem(args);
      reject(problem ? new NotCloneableError(`The arguments of ctx.${method}`, problem.path, problem.reason) : (err as Error));
    }
  });
}

async function runJob(source: InstanceSource | Resolve, runId: number, job: WireJob, payload: unknown): Promise<void> {
  const run: CurrentRun = { runId, calls: new Map(), suspended: undefined, ctx: undefined as unknown as ThreadContext };
  run.ctx = new ThreadContext(job, { call: (method, args) => call(run, method, args), post }, runId);
  current = run;
  let message: FromThread;
  try {
    const instance = await instanceFor(source, job.name);
    const value = await instance.run(payload, run.ctx);
    const problem = findCloneProblem(value);
    message = problem
      ? { t: 'done', runId, ok: false, error: toWire(new NotCloneableError(`The result of job "${job.name}"`, problem.path, problem.reason)), suspended: false }
      : { t: 'done', runId, ok: true, value };
  } catch (err) {
    message = { t: 'done', runId, ok: false, error: toWire(err), suspended: run.suspended !== undefined };
  }
  if (current === run) current = undefined;
  post(message);
}

function onMessage(source: InstanceSource | Resolve, message: ToThread): void {
  switch (message.t) {
    case 'run':
      void runJob(source, message.runId, message.job, message.payload);
      return;
    case 'abort':
      if (current?.runId === message.runId) current.ctx.controller.abort(fromWire(message.reason));
      return;
    case 'reply': {
      const run = current;
      if (run?.runId !== message.runId) return;
      const pending = run.calls.get(message.callId);
      if (!pending) return;
      run.calls.delete(message.callId);
      if (message.ok) pending.resolve(message.value);
      else if (message.suspended) pending.reject((run.suspended ??= new Suspended()));
      else pending.reject(fromWire(message.error));
      return;
    }
    case 'fn': {
      const run = current;
      if (run?.runId !== message.runId) return;
      const { runId, fnId } = message;
      run.ctx.runFn(fnId).then(
        (value) => post({ t: 'fn-done', runId, fnId, ok: true, value }),
        (err: unknown) => post({ t: 'fn-done', runId, fnId, ok: false, error: toWire(err) }),
      );
      return;
    }
  }
}

loadSource().then(
  (source) => {
    link.listen((message) => onMessage(source, message));
    post({ t: 'ready' });
  },
  (err: unknown) => post({ t: 'init-failed', error: toWire(err) }),
);
