import { readFileSync } from 'node:fs';

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
