/**
 * The replica set's logical clock: every committed write and every change event gets the next
 * timestamp ({ t: seconds, i: increment }), strictly increasing even when the emulator's clock
 * stands still or goes back (a test's fake clock). Replies carry it as `operationTime` and
 * `$clusterTime`, which is what causal consistency (`afterClusterTime`) and change streams'
 * `startAtOperationTime` are built on.
 */
import { Binary, Long, Timestamp } from 'bson';
import type { Doc } from './values.js';

const NO_SIGNATURE = { hash: new Binary(Buffer.alloc(20)), keyId: Long.fromNumber(0) };

export class LogicalClock {
  private seconds = 0;
  private increment = 0;
  private latest: Timestamp;
  private fieldsFor?: Timestamp;
  private fields?: Doc;

  constructor(private readonly now: () => Date) {
    this.latest = this.tick();
  }

  /** The newest timestamp handed out. */
  get current(): Timestamp {
    return this.latest;
  }

  /** The next timestamp, for a write about to be applied. */
  tick(): Timestamp {
    const secs = Math.floor(this.now().getTime() / 1000);
    if (secs > this.seconds) {
      this.seconds = secs;
      this.increment = 1;
    } else {
      this.increment++;
    }
    this.latest = new Timestamp({ t: this.seconds, i: this.increment });
    return this.latest;
  }

  /**
   * The fields a replica set member adds to every reply. The same object while no write ticked the
   * clock (replies only read it): most replies in a row carry the same time.
   */
  replyFields(): Doc {
    if (this.fieldsFor !== this.latest) {
      this.fieldsFor = this.latest;
      this.fields = { $clusterTime: { clusterTime: this.latest, signature: NO_SIGNATURE }, operationTime: this.latest };
    }
    return this.fields!;
  }
}
