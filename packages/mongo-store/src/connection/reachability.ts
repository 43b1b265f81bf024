import { MongoNetworkError, MongoServerSelectionError, type MongoClient } from 'mongodb';
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

function unreachable(client: MongoClient, timeoutMs: number, reason: string): LoomError {
  return new StoreUnreachableError(describeServer(client), timeoutMs, reason);
}

/**
 * Runs `work` (the first connection and round trip) with a deadline of `timeoutMs` of real time:
 * an unreachable server fails in one line naming the hosts, instead of the driver's 30 s server
 * selection and its multi-line error. `onTimeout` lets the caller stop the connection attempt.
 */
export async function withinReach<T>(client: MongoClient, timeoutMs: number, work: () => Promise<T>, onTimeout: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const attempt = work();
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      // The attempt goes on in the driver until onTimeout stops it; its late failure is expected.
      attempt.catch(() => {});
      onTimeout();
      reject(unreachable(client, timeoutMs, 'no server answered'));
    }, timeoutMs);
    timer.unref();
  });
  try {
    return await Promise.race([attempt, deadline]);
  } catch (err) {
    if (isUnreachable(err)) throw unreachable(client, timeoutMs, (err as Error).message);
    throw err;
  } finally {
    clearTimeout(timer);
  }
}
