import { describe, expect, it } from '@jest/globals';
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { threadEntry } from '../src/sandbox/pool.js';
import { limitFlags, StderrRelay } from '../src/sandbox/process-channel.js';

// Jobs with resourceLimits run in a child process (packages/core/src/sandbox/channel.ts): the
// flags that hold the limits there, and a child that does not outlive its engine. The runs
// themselves (bridge, out of heap, retries) are in the sandbox scenarios.

describe('a sandbox process', () => {
  it('holds resourceLimits with the matching V8 flags', () => {
    expect(limitFlags({ maxOldGenerationSizeMb: 256 })).toEqual(['--max-old-space-size=256']);
    expect(limitFlags({ maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 12, stackSizeMb: 2 })).toEqual([
      '--max-old-space-size=64',
      '--max-semi-space-size=4',
      '--stack-size=2048',
    ]);
    // V8 has no flag for the code range: not applied in a process.
    expect(limitFlags({ codeRangeSizeMb: 16 })).toEqual([]);
  });

  it("passes the handler's stderr on line by line, but not V8's report of its death (supervisors read it as the engine's)", () => {
    const passed: string[] = [];
    const relay = new StderrRelay((text) => passed.push(text));
    relay.heard('resizing image 1\nresizing ');
    relay.heard('image 2\n\n<--- Last few GCs --->\n[1:0x1]  499 ms: Mark-Compact 15.9 -> 15.9 MB allocation failure;\n');
    relay.heard('FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\n');
    relay.end();
    expect(passed.join('')).toBe('resizing image 1\nresizing image 2\n\n');
    expect(relay.tail).toContain('JavaScript heap out of memory');
  });

  it('exits when its engine goes away (the IPC channel closes), leaving no orphan', async () => {
    const module = new URL('../../testing/dist/sandbox/container.js', import.meta.url).href;
    const child = fork(fileURLToPath(threadEntry()), [JSON.stringify({ moduleHref: module })], {
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const [ready] = (await once(child, 'message')) as [{ t: string }];
    expect(ready).toEqual({ t: 'ready' });
    const exited = once(child, 'exit');
    child.disconnect();
    const [code, signal] = (await exited) as [number | null, string | null];
    expect({ code, signal }).toEqual({ code: 0, signal: null });
  });
});
