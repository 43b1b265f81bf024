#!/usr/bin/env node
/** Entry point of `loom-mongo-emulator`; see cli.ts. */
import { runCli } from './cli.js';

const run = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  signals: process,
});
process.exitCode = await run.exited;
// Client sockets may linger past stop(); the emulator is done, so leave now.
process.exit();
