import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ChildReport, ScenarioSpec } from './scenario.js';

const WORKER = fileURLToPath(new URL('./worker.js', import.meta.url));

type ChildMessage = { ok: true; report: ChildReport } | { ok: false; error: string };

/**
 * Runs one scenario in a fresh Node process (so each engine's peak RSS and CPU are its own) and
 * returns its report. The child is killed if it outlives the scenario's timeout plus a margin.
 */
export function runInChild(spec: ScenarioSpec, execArgv: string[] = []): Promise<ChildReport> {
  return new Promise((resolve, reject) => {
    const child = fork(WORKER, [JSON.stringify(spec)], { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let message: ChildMessage | undefined;
    const killer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`scenario ${describeSpec(spec)} did not finish within ${spec.timeoutMs + 30_000} ms; killed it`));
    }, spec.timeoutMs + 30_000);
    child.on('message', (m: ChildMessage) => {
      message = m;
    });
    child.on('error', (err) => {
      clearTimeout(killer);
      reject(err);
    });
    child.on('exit', (code, signal) => {
      clearTimeout(killer);
      if (message?.ok) resolve(message.report);
      else if (message) reject(new Error(`scenario ${describeSpec(spec)} failed: ${message.error}`));
      else reject(new Error(`scenario ${describeSpec(spec)} exited (${code ?? signal}) without a report`));
    });
  });
}

/** A short label for logs: kind and engine. */
export function describeSpec(spec: ScenarioSpec): string {
  return 'engine' in spec ? `${spec.kind}/${spec.engine}` : spec.kind;
}
