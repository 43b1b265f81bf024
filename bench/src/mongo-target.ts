import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { MongoClient } from 'mongodb';
import { packageDir } from './versions.js';

/** The MongoDB every scenario of one benchmark run talks to. */
export interface MongoTarget {
  kind: 'external' | 'emulator';
  uri: string;
  /** The URI with any password removed, for printing and results. */
  shownUri: string;
  serverVersion: string;
  /** What the figures mean on this target. */
  note: string;
  /** The server's process id when it is a local child process (its CPU time can then be read). */
  serverPid?: number;
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 30_000;

/** `MONGODB_URI` when set; otherwise the Loom emulator, started as a process of its own through its bin. */
export async function openMongoTarget(env: NodeJS.ProcessEnv, profileDir?: string): Promise<MongoTarget> {
  if (env.MONGODB_URI) {
    const uri = env.MONGODB_URI;
    return {
      kind: 'external',
      uri,
      shownUri: redact(uri),
      serverVersion: await serverVersion(uri),
      note: 'a real MongoDB server (MONGODB_URI)',
      stop: async () => {},
    };
  }
  const { child, uri } = await startEmulator(profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]);
  return {
    kind: 'emulator',
    uri,
    shownUri: uri,
    serverVersion: await serverVersion(uri),
    note: 'the Loom MongoDB emulator (in-memory, one Node process): the figures compare the engines on one server, they are not MongoDB figures',
    ...(child.pid === undefined ? {} : { serverPid: child.pid }),
    stop: () => stopChild(child),
  };
}

async function startEmulator(execArgv: string[]): Promise<{ child: ChildProcess; uri: string }> {
  const dir = packageDir('@loom/mongo-emulator');
  const pkg = JSON.parse(readFileSync(`${dir}/package.json`, 'utf8')) as { bin: Record<string, string> };
  const bin = `${dir}/${pkg.bin['loom-mongo-emulator']}`;
  const child = spawn(process.execPath, [...execArgv, bin, '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const uri = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the emulator (${bin}) printed no URI within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', (line) => {
      clearTimeout(timer);
      resolve(line.trim());
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the emulator (${bin}) exited with code ${code} before printing its URI; run "npm run build" first`));
    });
  });
  return { child, uri };
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

async function serverVersion(uri: string): Promise<string> {
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 10_000 });
  try {
    const info = await client.db('admin').command({ buildInfo: 1 });
    return String(info.version ?? 'unknown');
  } finally {
    await client.close();
  }
}

function redact(uri: string): string {
  return uri.replace(/\/\/([^:@/]+):([^@/]+)@/, '//$1:***@');
}
