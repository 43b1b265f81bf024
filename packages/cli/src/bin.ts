#!/usr/bin/env node
/** Entry point of the `loom` command; see cli.ts. */
import { runLoom } from './cli.js';

process.exitCode = await runLoom(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  interactive: process.stderr.isTTY === true,
});
