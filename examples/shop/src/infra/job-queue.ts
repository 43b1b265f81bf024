import { injectable } from 'inversify';
import type { EnqueueArgs, EnqueueResult, JobClass, Loom } from '@loom/core';

/**
 * The shop's handle on Loom. Loom builds the job classes through the container while it is being
 * created, so a job cannot take `Loom` itself in its constructor; it takes this, and the
 * composition root attaches the engine once it exists.
 */
@injectable()
export class JobQueue {
  private engine: Loom | undefined;

  attach(loom: Loom): void {
    this.engine = loom;
  }

  get loom(): Loom {
    if (!this.engine) throw new Error('JobQueue used before the composition root attached Loom (createShopApp does it right after Loom.create)');
    return this.engine;
  }

  enqueue<C extends JobClass>(job: C, ...args: EnqueueArgs<C>): Promise<EnqueueResult> {
    return this.loom.enqueue(job, ...args);
  }
}
