// The emulator as its own process (its bin) for the bench scripts, with its CPU time read from
// /proc/<pid>/task/*/schedstat (nanoseconds, every thread), so a driver's CPU is measured apart from
// it (Linux only). EMULATOR_NODE_ARGS passes node options to it (e.g. '--cpu-prof --cpu-prof-dir=DIR').
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** Starts the emulator; resolves with its URI, a reader of its CPU nanoseconds so far, and stop(). */
export async function startEmulatorProcess() {
  const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
  const server = spawn(process.execPath, [...(process.env.EMULATOR_NODE_ARGS ?? '').split(' ').filter(Boolean), bin, '--port', '0'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const uri = await new Promise((resolve) => createInterface({ input: server.stdout }).once('line', resolve));
  const cpuNs = () => {
    let ns = 0;
    for (const task of readdirSync(`/proc/${server.pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${server.pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // a thread that ended between the listing and the read
      }
    }
    return ns;
  };
  return { uri, cpuNs, stop: () => server.kill('SIGTERM') };
}
