import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';

/**
 * `BENCH_WINDOW_PROFILE=DIR`: a CPU profile of the measured window only (the processing phase of a
 * throughput run), written to `DIR/<kind>-<window>-<pid>.cpuprofile`. `node --cpu-prof` profiles the
 * whole process, enqueue phase and module loading included, which hides what a job costs the worker.
 * Read it with `node bench/dist/profile-summary.js FILE`.
 *
 * With `BENCH_WINDOW_HEAP=1` as well, a sampling heap profile of the same window instead
 * (`.heapprofile`, loadable in Chrome DevTools' Memory tab): every allocation sampled, collected
 * objects included, so it tells what a job allocates rather than what stays alive. It slows the run
 * several times over: read its bytes, not the run's timings.
 */
export class WindowProfiler {
  private constructor(
    private readonly session: Session,
    private readonly file: string,
    private readonly heap: boolean,
  ) {}

  /** Starts profiling when `BENCH_WINDOW_PROFILE` is set; otherwise undefined (nothing runs). */
  static async fromEnv(window: string): Promise<WindowProfiler | undefined> {
    const dir = process.env.BENCH_WINDOW_PROFILE;
    if (!dir) return undefined;
    mkdirSync(dir, { recursive: true });
    const session = new Session();
    session.connect();
    const heap = process.env.BENCH_WINDOW_HEAP === '1';
    if (heap) {
      await session.post('HeapProfiler.enable');
      // Node's typings predate the two flags that keep samples of collected objects.
      await session.post('HeapProfiler.startSampling', {
        samplingInterval: 256,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      } as { samplingInterval: number });
    } else {
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
    }
    const kind = (JSON.parse(process.argv[2] ?? '{}') as { kind?: string }).kind ?? 'scenario';
    return new WindowProfiler(session, join(dir, `${kind}-${window}-${process.pid}.${heap ? 'heapprofile' : 'cpuprofile'}`), heap);
  }

  async stop(): Promise<void> {
    const { profile } = this.heap ? await this.session.post('HeapProfiler.stopSampling') : await this.session.post('Profiler.stop');
    writeFileSync(this.file, JSON.stringify(profile));
    this.session.disconnect();
  }
}
