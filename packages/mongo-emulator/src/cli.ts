/**
 * The `loom-mongo-emulator` command: parses arguments, starts the emulator, prints its URI and
 * stops cleanly on SIGINT/SIGTERM. Process access is injected so tests drive it in-process.
 */
import { parseArgs } from 'node:util';
import { MongoEmulator } from './emulator.js';

export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  /** Where SIGINT/SIGTERM arrive (the process, or a test's emitter). */
  signals: { once(signal: 'SIGINT' | 'SIGTERM', listener: () => void): unknown };
}

export interface CliRun {
  /** The running emulator (undefined when the arguments were rejected). */
  emulator?: MongoEmulator;
  /** Resolves with the exit code once the emulator has stopped (or failed to start). */
  exited: Promise<number>;
}

const USAGE = 'usage: loom-mongo-emulator [--port 27017] [--standalone | --replSet NAME | --shards N [--server-version 7.0]]\n';

export async function runCli(argv: string[], io: CliIo): Promise<CliRun> {
  let values: { port?: string; standalone?: boolean; replSet?: string; shards?: string; 'server-version'?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        port: { type: 'string', default: '27017' },
        standalone: { type: 'boolean', default: false },
        replSet: { type: 'string' },
        shards: { type: 'string' },
        'server-version': { type: 'string' },
        help: { type: 'boolean', default: false },
      },
    }));
  } catch (err) {
    io.stderr(`${err instanceof Error ? err.message : String(err)}\n${USAGE}`);
    return { exited: Promise.resolve(2) };
  }
  if (values.help) {
    io.stdout(USAGE);
    return { exited: Promise.resolve(0) };
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    io.stderr(`--port must be an integer between 0 and 65535, got '${values.port}'\n${USAGE}`);
    return { exited: Promise.resolve(2) };
  }
  if (values.standalone && values.replSet) {
    io.stderr(`--standalone and --replSet cannot be combined\n${USAGE}`);
    return { exited: Promise.resolve(2) };
  }
  const shards = values.shards === undefined ? undefined : Number(values.shards);
  if (shards !== undefined && (!Number.isInteger(shards) || shards < 1 || shards > 1024)) {
    io.stderr(`--shards must be an integer between 1 and 1024, got '${values.shards}'\n${USAGE}`);
    return { exited: Promise.resolve(2) };
  }
  if ((shards !== undefined && values.standalone) || (values['server-version'] !== undefined && shards === undefined)) {
    io.stderr(`--shards cannot be combined with --standalone, and --server-version needs --shards\n${USAGE}`);
    return { exited: Promise.resolve(2) };
  }
  let emulator: MongoEmulator;
  try {
    emulator = await MongoEmulator.start({ port, replicaSet: values.standalone ? false : (values.replSet ?? true), shards, version: values['server-version'] });
  } catch (err) {
    io.stderr(`loom-mongo-emulator could not start on port ${port}: ${err instanceof Error ? err.message : String(err)}\n`);
    return { exited: Promise.resolve(1) };
  }
  io.stdout(`${emulator.uri}\n`);
  const exited = new Promise<number>((resolve) => {
    const stop = () => {
      emulator.stop().then(
        () => resolve(0),
        (err: unknown) => {
          io.stderr(`error while stopping: ${err instanceof Error ? err.message : String(err)}\n`);
          resolve(1);
        },
      );
    };
    io.signals.once('SIGINT', stop);
    io.signals.once('SIGTERM', stop);
  });
  return { emulator, exited };
}
