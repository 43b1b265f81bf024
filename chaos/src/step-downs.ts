import type { MongoClient } from 'mongodb';

/** The step-downs a chaos run made, and how to stop making them. */
export interface StepDowns {
  readonly count: number;
  stop(): Promise<void>;
}

/**
 * Every `everyMs`, steps the primary down for `forMs` with `replSetStepDown`, as an election in a
 * replica set does: open connections are closed or answered NotWritablePrimary, change streams
 * are interrupted, and after the time the node is primary again (`@loom/mongo-emulator` does what
 * mongod does here; see its README). The engines must carry on without a restart. `log` gets one
 * line per step-down. A step-down the server refuses is logged and skipped, never fatal.
 */
export function startStepDowns(client: MongoClient, everyMs: number, forMs: number, log: (line: string) => void): StepDowns {
  let count = 0;
  let stopped = false;
  let current: Promise<void> = Promise.resolve();
  let inFlight = false;
  const seconds = Math.max(1, Math.round(forMs / 1000));
  const step = async () => {
    try {
      await client.db('admin').command({ replSetStepDown: seconds, secondaryCatchUpPeriodSecs: 0, force: true });
      count++;
      log(`step-down ${count}: the primary stepped down for ${seconds} s`);
    } catch (err) {
      // mongod answers a step-down by closing the connection that asked for it: that is success.
      // "not primary so can't step down" is not: the node was still stepped down (the previous
      // step-down's command took longer than the interval), so nothing happened.
      const message = (err as Error).message ?? String(err);
      if (/can't step down/i.test(message)) {
        log(`a step-down was skipped: the node is not primary yet (${message})`);
      } else if (/closed|interrupted|ECONNRESET|not primary|NotWritablePrimary|InterruptedDueToReplStateChange/i.test(message)) {
        count++;
        log(`step-down ${count}: the primary stepped down for ${seconds} s (${message})`);
      } else {
        log(`a step-down failed: ${message}`);
      }
    }
  };
  const timer =
    everyMs > 0
      ? setInterval(() => {
          // A step-down whose command is still out (the driver retries through the election) makes
          // this tick skip rather than queue a second one right behind it.
          if (stopped || inFlight) return;
          inFlight = true;
          current = current.then(step).finally(() => {
            inFlight = false;
          });
        }, everyMs)
      : undefined;
  return {
    get count() {
      return count;
    },
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      await current;
    },
  };
}
