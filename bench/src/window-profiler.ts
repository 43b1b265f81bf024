import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';

/**
 * `BENCH_WINDOW_PROFILE=DIR`: a CPU profile of the measured window only (the processing phase of a
 * throughput run), written to `DIR/<kind>-<window>-<pid>.cpuprofile`. `node --cpu-prof` profiles the
 * whole process, enqueue phase and module loading included, which hides what a job costs the worker.
 * Read it with `node bench/dist/profile-summary.js FILE`.
 */
export class WindowProfiler {
  private constructor(
    private readonly session: Session,
    private readonly file: string,
  ) {}

  /** Starts profiling when `BENCH_WINDOW_PROFILE` is set; otherwise undefined (nothing runs). */
  static async fromEnv(window: string): Promise<WindowProfiler | undefined> {
    const dir = process.env.BENCH_WINDOW_PROFILE;
    if (!dir) return undefined;
    mkdirSync(dir, { recursive: true });
    const session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
    const kind = (JSON.parse(process.argv[2] ?? '{}') as { kind?: string }).kind ?? 'scenario';
    return new WindowProfiler(session, join(dir, `${kind}-${window}-${process.pid}.cpuprofile`));
  }

  async stop(): Promise<void> {
    const { profile } = await this.session.post('Profiler.stop');
    writeFileSync(this.file, JSON.stringify(profile));
    this.session.disconnect();
  }
}
