#!/usr/bin/env node
// The `loom-mongo-emulator` command's launcher, committed as plain JavaScript so that the bin
// exists when npm links it: in a fresh clone `npm install` runs before the build, and npm skips a
// bin whose file is missing then.
import { existsSync } from 'node:fs';

const entry = new URL('../dist/bin.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write(
    `loom-mongo-emulator: ${entry.pathname} is missing: @loom/mongo-emulator is not built. Run \`npm run build\` in the Loom checkout first.\n`,
  );
  process.exit(2);
}
await import(entry.href);
