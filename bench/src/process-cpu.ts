import { readdirSync, readFileSync } from 'node:fs';

/** Linux clock ticks per second of /proc/<pid>/stat times (USER_HZ: 100 on every mainstream kernel). */
const USER_HZ = 100;

/** user + system CPU time of a process, ms, from /proc (Linux only); undefined elsewhere or once it is gone. */
export function processCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after "(comm) ": state is the first, utime the 12th, stime the 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / USER_HZ;
  } catch {
    return undefined;
  }
}

/** Measures a server process's CPU over a window; `perJob` is undefined when it cannot be read. */
export class ServerCpu {
  private readonly start: number | undefined;

  constructor(private readonly pid: number | undefined) {
    this.start = processCpuMs(pid);
  }

  /** Server CPU µs per job since construction, as a metric entry (empty when unreadable). */
  perJob(jobs: number): { serverCpuUsPerJob?: number } {
    const end = processCpuMs(this.pid);
    return this.start === undefined || end === undefined ? {} : { serverCpuUsPerJob: ((end - this.start) * 1000) / jobs };
  }
}

/** CPU time of this process's threads, ns: its main (JavaScript) thread and all the others together. */
export interface ThreadCpuNs {
  main: number;
  other: number;
}

/**
 * This process's CPU time by thread, from /proc/self/task/<tid>/schedstat (Linux only; undefined
 * elsewhere). The other threads are V8's (optimising compilation, GC helpers) and libuv's pool:
 * `process.cpuUsage()` counts them with the main thread, and in a 10,000-job run much of their
 * work is the JIT's one-time compilation of the hot path (bench/README.md, "Issue 33 item 1").
 */
export function threadCpuNs(): ThreadCpuNs | undefined {
  try {
    const out: ThreadCpuNs = { main: 0, other: 0 };
    for (const tid of readdirSync('/proc/self/task')) {
      let ns: number;
      try {
        ns = Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        continue; // the thread ended between the listing and the read
      }
      if (tid === String(process.pid)) out.main += ns;
      else out.other += ns;
    }
    return out;
  } catch {
    return undefined;
  }
}
