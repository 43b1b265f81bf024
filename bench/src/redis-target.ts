import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { createServer, connect } from 'node:net';
import { delimiter, join } from 'node:path';

/** A redis-server this benchmark started for BullMQ, on a free local port. */
export interface RedisTarget {
  port: number;
  pid: number;
  version: string;
  stop(): Promise<void>;
}

/** Why BullMQ is not measured, or the redis-server to measure it on. */
export type RedisAvailability = { available: true; target: RedisTarget } | { available: false; reason: string };

const START_TIMEOUT_MS = 10_000;

/** The path of `redis-server` on PATH, if any (the benchmark installs nothing itself). */
function findRedisServer(env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const file = join(dir, 'redis-server');
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Starts `redis-server` (in memory: no snapshots, no append-only file) on a free port of
 * 127.0.0.1 when it is on PATH; otherwise says why BullMQ is skipped.
 */
export async function openRedis(env: NodeJS.ProcessEnv): Promise<RedisAvailability> {
  const bin = findRedisServer(env);
  if (bin === undefined)
    return { available: false, reason: 'redis-server is not on PATH (Debian: apt-get install redis-server); the benchmark installs nothing itself' };
  const version = /v=(\S+)/.exec(spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout ?? '')?.[1] ?? 'unknown';
  const port = await freePort();
  const child = spawn(bin, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--loglevel', 'warning'], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!(await accepts(port))) {
    if (child.exitCode !== null) return { available: false, reason: `redis-server (${bin}) exited with code ${child.exitCode} on start` };
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      return { available: false, reason: `redis-server (${bin}) did not accept connections on port ${port} within ${START_TIMEOUT_MS} ms` };
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { available: true, target: { port, pid: child.pid!, version, stop: () => stop(child, exited) } };
}

async function stop(child: ChildProcess, exited: Promise<number | null>): Promise<void> {
  if (child.exitCode === null) child.kill('SIGTERM');
  await exited;
}
