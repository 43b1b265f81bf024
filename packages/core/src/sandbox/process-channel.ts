import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { SandboxResourceLimits } from '../jobs/job-options.js';
import type { SandboxChannel } from './channel.js';
import type { FromThread, ThreadData, ToThread } from './wire.js';

/** How much of the child's stderr is kept to tell why it ended. */
const STDERR_TAIL_BYTES = 4_096;

/**
 * The first line of V8's report when a process dies (out of heap, a fatal error). The report is
 * kept for the crash's message but not passed on: supervisors watching the engine's stderr (jest's
 * workers, for one) read "heap out of memory" there as the engine's own death and kill it.
 */
const V8_FATAL_REPORT = /^(<--- Last few GCs --->|FATAL ERROR:|#\s*Fatal error)/;

/** Engine flags a child must not inherit: a debugger port it cannot share, limits of its own. */
const NOT_INHERITED = /^--(inspect|inspect-brk|inspect-port|debug-port|max-old-space-size|max-semi-space-size|stack-size)(=|$)/;

/**
 * The V8 flags that hold `limits` in a process. `codeRangeSizeMb` has no flag and is not applied;
 * `maxYoungGenerationSizeMb` is three semi-spaces in V8's young generation.
 */
export function limitFlags(limits: SandboxResourceLimits): string[] {
  const flags: string[] = [];
  if (limits.maxOldGenerationSizeMb !== undefined) flags.push(`--max-old-space-size=${Math.max(1, Math.floor(limits.maxOldGenerationSizeMb))}`);
  if (limits.maxYoungGenerationSizeMb !== undefined) flags.push(`--max-semi-space-size=${Math.max(1, Math.floor(limits.maxYoungGenerationSizeMb / 3))}`);
  if (limits.stackSizeMb !== undefined) flags.push(`--stack-size=${Math.max(64, Math.floor(limits.stackSizeMb * 1024))}`);
  return flags;
}

/**
 * A sandbox runner in a child process (jobs with `resourceLimits`), started with the engine's
 * Node flags (loaders such as tsx included) plus the limits, and talking over the IPC channel with
 * V8's serializer (the structured clones a thread gets). Out of heap, V8 aborts the child alone.
 */
export class ProcessChannel implements SandboxChannel {
  readonly kind = 'process';
  readonly id: number;
  private readonly child: ChildProcess;
  private readonly stderr = new StderrRelay((text) => process.stderr.write(text));
  private spawnError: Error | undefined;

  constructor(entry: URL, data: ThreadData, limits: SandboxResourceLimits) {
    const execArgv = [...process.execArgv.filter((arg) => !NOT_INHERITED.test(arg)), ...limitFlags(limits)];
    this.child = fork(fileURLToPath(entry), [JSON.stringify(data)], {
      execArgv,
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
    });
    this.id = this.child.pid ?? -1;
    // Idle children must not keep the engine's process alive: the engine's own timers do while it runs.
    this.child.unref();
    this.child.channel?.unref();
    const stderr = this.child.stderr!;
    (stderr as unknown as { unref?(): void }).unref?.();
    stderr.on('data', (chunk: Buffer) => this.stderr.heard(chunk.toString('utf8')));
    stderr.on('end', () => this.stderr.end());
    this.child.on('error', (err) => {
      this.spawnError = err;
    });
  }

  post(message: ToThread): void {
    if (this.child.connected) this.child.send(message);
  }

  onMessage(listener: (message: FromThread) => void): void {
    this.child.on('message', (message) => listener(message as FromThread));
  }

  onExit(listener: (crash: string) => void): void {
    // `close` comes after the stderr pipe has drained: the tail then holds V8's last words.
    this.child.once('close', (code, signal) => listener(this.describe(code, signal)));
  }

  terminate(): void {
    this.child.kill('SIGKILL');
  }

  private describe(code: number | null, signal: NodeJS.Signals | null): string {
    if (this.spawnError) return `could not start: ${this.spawnError.message}`;
    if (/heap out of memory|Reached heap limit|Allocation failed/i.test(this.stderr.tail)) {
      return `ran out of memory (its resourceLimits; process ${this.id})`;
    }
    const last = this.stderr.tail.trim().split('\n').pop()?.trim().slice(0, 200);
    const how = signal !== null ? `was killed by ${signal}` : `exited with code ${code}`;
    return `${how}${last ? ` (its last stderr line: ${last})` : ''} (process.exit was called in the handler, or the process ended)`;
  }
}

/**
 * A child's stderr on its way to the engine's: what the handler writes stays visible, line by
 * line, as a thread's does; V8's fatal report does not (see {@link V8_FATAL_REPORT}). The last
 * bytes are kept to tell why the child ended.
 */
export class StderrRelay {
  /** The last {@link STDERR_TAIL_BYTES} of the child's stderr, fatal report included. */
  tail = '';
  /** Since the last newline, not yet passed on. */
  private line = '';
  /** Set once V8's fatal report begins: the rest goes to the tail only. */
  private dying = false;

  constructor(private readonly passOn: (text: string) => void) {}

  heard(text: string): void {
    this.tail = (this.tail + text).slice(-STDERR_TAIL_BYTES);
    if (this.dying) return;
    const lines = (this.line + text).split('\n');
    this.line = lines.pop() ?? '';
    for (const line of lines) {
      if (V8_FATAL_REPORT.test(line.trim())) {
        this.dying = true;
        return;
      }
      this.passOn(`${line}\n`);
    }
  }

  /** The stream ended: a last line without its newline is passed on. */
  end(): void {
    if (!this.dying && this.line !== '') this.passOn(this.line);
    this.line = '';
  }
}
