import type { Clock } from '../support/clock.js';
import { LoomError } from '../support/errors.js';
import type { Logger } from '../support/logger.js';
import { toError } from '../support/to-error.js';
import { afterThisTurn } from '../support/after-this-turn.js';
import type { BatchContext, BatchHandler, BatchItem } from '../jobs/job-class.js';
import type { JobDefinition } from '../jobs/job-definition.js';

/**
 * Batch handlers (`@Job({ batch: { size, wait } })`): the runs of a batch name do not call a
 * handler each; each run adds its job to its name's open call, and the call goes to
 * `runBatch(items, ctx)` once it holds `size` items or `wait` has passed since its first. Each
 * run then takes its own entry of the answer as if its own handler had returned it (a value) or
 * thrown it (an `Error`), so everything after — completion, retry with backoff, dead letter,
 * cancel, timeout, lost lease — is the run's own, per job. The worker pool claims a batch name's
 * jobs by the call (see worker-pool.ts), so a call fills from one claim when enough are due.
 */

interface PendingItem {
  item: BatchItem;
  /** The run's `ctx.signal`, made only when the handler reads its call's `ctx.signal` (most never do). */
  signal: () => AbortSignal;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

interface OpenCall {
  items: PendingItem[];
  cancelTimer?: () => void;
}

export class BatchCalls {
  /** The call still taking items, per name. */
  private readonly open = new Map<string, OpenCall>();
  /** Calls sent to their handler and not answered yet, per name. */
  private readonly inFlight = new Map<string, number>();

  constructor(private readonly deps: { clock: Clock; logger: Logger }) {}

  /** How many items the open call of `def` can still take (its `size` when none is open). */
  room(def: JobDefinition): number {
    return def.batch!.size - (this.open.get(def.name)?.items.length ?? 0);
  }

  /** Whether a call of `def` is open (taking items) now. */
  isOpen(name: string): boolean {
    return this.open.has(name);
  }

  /** Calls of `name` open or waiting for their handler's answer: each counts as one run of the engine's concurrency. */
  calls(name: string): number {
    return (this.inFlight.get(name) ?? 0) + (this.open.has(name) ? 1 : 0);
  }

  /**
   * Adds one run's job to its name's open call (opening one if needed); resolves with its entry of
   * the handler's answer, or rejects with its `Error` entry (or with what the handler threw).
   */
  add(def: JobDefinition, handler: BatchHandler, item: BatchItem, signal: () => AbortSignal): Promise<unknown> {
    return new Promise((resolve, reject) => {
      let call = this.open.get(def.name);
      if (!call) {
        call = { items: [] };
        this.open.set(def.name, call);
        const opened = call;
        if (def.batch!.waitMs > 0) opened.cancelTimer = this.deps.clock.setTimer(() => this.send(def, handler, opened), def.batch!.waitMs);
        // Without a wait, the call takes what arrives in this turn of the event loop (one claim's jobs) and goes.
        else void afterThisTurn().then(() => this.send(def, handler, opened));
      }
      call.items.push({ item, signal, resolve, reject });
      if (call.items.length >= def.batch!.size) this.send(def, handler, call);
    });
  }

  private send(def: JobDefinition, handler: BatchHandler, call: OpenCall): void {
    if (this.open.get(def.name) !== call) return; // sent already
    this.open.delete(def.name);
    call.cancelTimer?.();
    this.inFlight.set(def.name, (this.inFlight.get(def.name) ?? 0) + 1);
    void this.answer(def, handler, call.items).finally(() => this.inFlight.set(def.name, (this.inFlight.get(def.name) ?? 1) - 1));
  }

  private async answer(def: JobDefinition, handler: BatchHandler, pending: PendingItem[]): Promise<void> {
    let signal: AbortSignal | undefined;
    const ctx: BatchContext = {
      name: def.name,
      get signal(): AbortSignal {
        return (signal ??= AbortSignal.any(pending.map((p) => p.signal())));
      },
      log: this.deps.logger,
    };
    let answer: unknown;
    try {
      answer = await handler.runBatch(
        pending.map((p) => p.item),
        ctx,
      );
    } catch (err) {
      const error = toError(err);
      for (const p of pending) p.reject(error);
      return;
    }
    if (!Array.isArray(answer) || answer.length !== pending.length) {
      const error = new LoomError(
        'INVALID_BATCH',
        `Job "${def.name}": runBatch must return an array with one entry per item, in order (${pending.length} items), ` +
          `got ${Array.isArray(answer) ? `${answer.length} entries` : typeof answer}; every item of the call failed`,
      );
      for (const p of pending) p.reject(error);
      return;
    }
    pending.forEach((p, i) => {
      const entry: unknown = answer[i];
      if (entry instanceof Error) p.reject(entry);
      else p.resolve(entry);
    });
  }
}
