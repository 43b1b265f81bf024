import { printJson, relative, table } from '../output.js';
import type { CommandContext } from './context.js';

/**
 * `loom workers ls`: the engines sharing the store that are alive (their presence rows, written
 * every few seconds; one that missed 3 beats is gone), with what they serve and run.
 */
export async function listWorkers(ctx: CommandContext): Promise<void> {
  const workers = await ctx.workers.list();
  const { output } = ctx;
  if (output.json) return printJson(output, workers);
  if (workers.length === 0) return output.out('no live workers: no engine sharing this store has recorded its presence in the last few beats\n');
  const rows = workers.map((w) => [
    w.id,
    w.host,
    w.pid,
    w.version,
    w.queues.join(','),
    w.concurrency,
    w.running,
    w.state === 'stopping' ? `${relative(w.lastSeenAt, output.now)} (stopping)` : relative(w.lastSeenAt, output.now),
  ]);
  output.out(table(['ID', 'HOST', 'PID', 'VERSION', 'QUEUES', 'CONCURRENCY', 'RUNNING', 'LAST SEEN'], rows));
}
