import { expect, it } from '@jest/globals';
import { threadCpuNs } from '../src/process-cpu.js';

it("charges the JavaScript thread's own work to the main thread, not to the others", () => {
  const before = threadCpuNs();
  if (before === undefined) return; // not Linux: the split is left out of the results
  // Spin on this thread until the process has used 50 ms more CPU (CPU time, whatever the load).
  const start = process.cpuUsage();
  let spins = 0;
  while (process.cpuUsage(start).user < 50_000) spins++;
  const after = threadCpuNs()!;
  expect(spins).toBeGreaterThan(0);
  expect(after.main - before.main).toBeGreaterThanOrEqual(40e6);
  expect(after.other - before.other).toBeLessThan(after.main - before.main);
});
