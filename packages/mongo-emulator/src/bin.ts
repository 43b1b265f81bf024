#!/usr/bin/env node
/** `loom-mongo-emulator --port 27017 [--standalone] [--replSet NAME]`: runs the emulator until SIGINT/SIGTERM. */
import { parseArgs } from 'node:util';
import { MongoEmulator } from './emulator.js';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '27017' },
      standalone: { type: 'boolean', default: false },
      replSet: { type: 'string' },
    },
  });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`--port must be an integer between 0 and 65535, got ${values.port}\n`);
    process.exit(2);
  }
  const emulator = await MongoEmulator.start({
    port,
    replicaSet: values.standalone ? false : (values.replSet ?? true),
  });
  process.stdout.write(`${emulator.uri}\n`);
  const shutdown = () => {
    emulator.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`error while stopping: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

main().catch((err: unknown) => {
  process.stderr.write(`loom-mongo-emulator failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
