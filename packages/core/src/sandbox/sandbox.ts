import type { JobContext, JobHandler, RunHandler } from '../jobs/job-class.js';
import type { JobDefinition } from '../jobs/job-definition.js';
import type { JobRegistry } from '../jobs/job-registry.js';
import type { JobRecord } from '../store/job-record.js';
import { EngineStoppedError } from '../support/errors.js';
import type { Logger } from '../support/logger.js';
import { SandboxBridge, type BridgedContext } from './bridge.js';
import { InlineContext } from './inline-context.js';
import { SandboxPool } from './pool.js';
import type { ResolvedSandbox } from './sandbox-options.js';
import { assertCloneable, type WireJob } from './wire.js';

/** A handler the runner can end early: a sandboxed run abandoned at its timeout or at shutdown ends its thread. */
export interface AbandonableHandler extends RunHandler {
  abandon?(why: string): void;
}

/**
 * The engine's sandbox: for each run of a `@Job({ sandbox })` job, a handler that runs it in a
 * thread of the pool ({@link SandboxPool}, the `ctx` bridged by {@link SandboxBridge}), or, with
 * `sandbox: 'inline'`, on the engine's thread under the same rules (cloneable results, no
 * `ctx.transaction`).
 */
export class Sandbox {
  private readonly pool: SandboxPool | undefined;

  constructor(
    private readonly deps: {
      sandbox: ResolvedSandbox;
      registry: JobRegistry;
      logger: Logger;
      /** Handler instances built by the engine's container (inline mode). */
      instances: ReadonlyMap<string, JobHandler>;
    },
  ) {
    const { sandbox, logger } = deps;
    if (sandbox.mode === 'threads') {
      this.pool = new SandboxPool({
        moduleHref: sandbox.moduleHref,
        size: sandbox.threads,
        logger,
        onCrash: (thread, error) =>
          logger.warn({ threadId: thread.threadId, err: error }, `A sandbox thread died (${error.message}); a new one starts when a sandboxed run needs it`),
      });
    }
  }

  /** Threads alive in the pool (0 in-line). */
  get threads(): number {
    return this.pool?.size ?? 0;
  }

  /** The handler of one run of `def` (a sandboxed job), or undefined in-line when the container did not build it. */
  handlerFor(def: JobDefinition, job: JobRecord): AbandonableHandler | undefined {
    if (!this.pool) {
      const instance = this.deps.instances.get(def.name);
      // A batch handler is never sandboxed (job options refuse `sandbox` with `batch`).
      return instance && 'run' in instance ? inlineHandler(def, instance) : undefined;
    }
    return this.threadHandler(this.pool, def, job);
  }

  /** Ends every thread (after the engine's runs have ended or been abandoned). */
  close(): void {
    this.pool?.close(new EngineStoppedError('(sandbox)'));
  }

  private threadHandler(pool: SandboxPool, def: JobDefinition, job: JobRecord): AbandonableHandler {
    const { registry } = this.deps;
    let abandon: ((why: string) => void) | undefined;
    let abandonedWith: string | undefined;
    return {
      abandon: (why) => {
        abandonedWith ??= why;
        abandon?.(why);
      },
      async run(payload: unknown, ctx: JobContext): Promise<unknown> {
        const request = pool.acquire({ jobName: def.name, cap: def.sandbox?.threads ?? Infinity, limits: def.sandbox?.resourceLimits });
        const signal = ctx.signal;
        const stopWaiting = (): void => request.cancel(toError(signal.reason));
        abandon = (why) => request.cancel(new EngineStoppedError(`${job.id} (${why})`));
        signal.addEventListener('abort', stopWaiting);
        if (signal.aborted) stopWaiting();
        let thread;
        try {
          thread = await request.thread;
        } finally {
          signal.removeEventListener('abort', stopWaiting);
        }
        if (abandonedWith !== undefined) {
          pool.release(thread);
          throw new EngineStoppedError(job.id);
        }
        const bridge = new SandboxBridge(thread, ctx as BridgedContext, registry, ctx.log);
        const { runId, done } = thread.run(wireJob(job), payload, bridge);
        bridge.runId = runId;
        const forward = (): void => thread.abort(runId, signal.reason);
        abandon = (why) => thread.terminate(why);
        signal.addEventListener('abort', forward);
        if (signal.aborted) forward();
        try {
          return await done;
        } finally {
          signal.removeEventListener('abort', forward);
          pool.release(thread);
        }
      },
    };
  }
}

/** `sandbox: 'inline'`: the handler on the engine's thread, its payload a clone, its result checked like a thread's. */
function inlineHandler(def: JobDefinition, instance: RunHandler): AbandonableHandler {
  return {
    async run(payload: unknown, ctx: JobContext): Promise<unknown> {
      const result: unknown = await instance.run(structuredClone(payload), new InlineContext(ctx));
      assertCloneable(`The result of job "${def.name}"`, result);
      return result;
    },
  };
}

function wireJob(job: JobRecord): WireJob {
  const wire: WireJob = { id: job.id, name: job.name, attempt: job.attempt };
  if (job.idempotencyKey !== undefined) wire.idempotencyKey = job.idempotencyKey;
  if (job.scheduledFor !== undefined) wire.scheduledFor = job.scheduledFor;
  return wire;
}

function toError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason));
}
