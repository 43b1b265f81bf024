import { MongoNetworkError, MongoServerSelectionError, type MongoClient, type ServerHeartbeatFailedEvent } from 'mongodb';
import type { LoomError } from '@loom/core';
import { StoreUnreachableError } from '../store-errors.js';

/**
 * Where the client connects, for messages: its hosts and replica set, never its credentials
 * (the driver keeps those apart from the host list).
 */
export function describeServer(client: MongoClient): string {
  const { hosts, replicaSet } = client.options;
  const where = hosts.map((h) => h.toString()).join(',') || '(no host)';
  return replicaSet ? `${where} (replica set ${replicaSet})` : where;
}

/** True for the driver's "no server answered" errors (as opposed to a server refusing a command). */
function isUnreachable(err: unknown): boolean {
  return err instanceof MongoServerSelectionError || err instanceof MongoNetworkError;
}

function unreachable(client: MongoClient, timeoutMs: number, reason: string, cause?: unknown): LoomError {
  return new StoreUnreachableError(describeServer(client), timeoutMs, reason, cause);
}

/** A connection refused (nothing listens on that port): the driver's failure, or its cause, says ECONNREFUSED. */
function isRefused(err: Error): boolean {
  const cause = (err as { cause?: { code?: unknown } }).cause;
  return cause?.code === 'ECONNREFUSED' || /\bECONNREFUSED\b/.test(err.message);
}

/**
 * Runs `work` (the first connection and round trip) with a deadline of `timeoutMs` of real time:
 * an unreachable server fails in one line naming the hosts, instead of the driver's 30 s server
 * selection and its multi-line error. `onTimeout` lets the caller stop the connection attempt.
 */
export async function withinReach<T>(client: MongoClient, timeoutMs: number, work: () => Promise<T>, onTimeout: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let onHeartbeatFailed: ((event: ServerHeartbeatFailedEvent) => void) | undefined;
  const attempt = work();
  const deadline = new Promise<never>((_, reject) => {
    const giveUp = (reason: string, cause?: unknown): void => {
      // The attempt goes on in the driver until onTimeout stops it; its late failure is expected.
      attempt.catch(() => {});
      onTimeout();
      reject(unreachable(client, timeoutMs, reason, cause));
    };
    timer = setTimeout(() => giveUp('no server answered'), timeoutMs);
    timer.unref();
    // A refused connection will not turn into an answer by waiting out the deadline (the driver
    // would keep selecting until then): once every seed host refused, say so at once, with the cause.
    const hosts = new Set(client.options.hosts.map((h) => h.toString()));
    const refused = new Set<string>();
    onHeartbeatFailed = (event) => {
      if (!isRefused(event.failure)) return;
      refused.add(event.connectionId);
      if ([...hosts].every((host) => refused.has(host))) giveUp(event.failure.message, event.failure);
    };
    client.on('serverHeartbeatFailed', onHeartbeatFailed);
  });
  try {
    return await Promise.race([attempt, deadline]);
  } catch (err) {
    if (isUnreachable(err)) throw unreachable(client, timeoutMs, (err as Error).message, err);
    throw err;
  } finally {
    clearTimeout(timer);
    if (onHeartbeatFailed) client.off('serverHeartbeatFailed', onHeartbeatFailed);
  }
}
