import { JOB_STATUSES } from '@loom/core';
import { printJson, relative, table } from '../output.js';
import type { CommandContext } from './context.js';

const COUNT_HEADERS = JOB_STATUSES.map((s) => s.toUpperCase());

/** `loom queues ls`. */
export async function listQueues(ctx: CommandContext): Promise<void> {
  const queues = await ctx.queues.list();
  const { output } = ctx;
  if (output.json) return printJson(output, queues);
  if (queues.length === 0) return output.out('no queues\n');
  const rows = queues.map((q) => [q.name, q.paused ? 'paused' : 'active', ...JOB_STATUSES.map((s) => q.counts[s]), relative(q.oldestQueuedAt, output.now)]);
  output.out(table(['QUEUE', 'STATE', ...COUNT_HEADERS, 'OLDEST QUEUED'], rows));
}

/** `loom stats`: jobs per status, per queue and in total. */
export async function stats(ctx: CommandContext): Promise<void> {
  const queues = await ctx.queues.list();
  const totals = Object.fromEntries(JOB_STATUSES.map((s) => [s, queues.reduce((sum, q) => sum + q.counts[s], 0)]));
  const { output } = ctx;
  if (output.json) return printJson(output, { totals, queues });
  const rows = queues.map((q) => [q.paused ? `${q.name} (paused)` : q.name, ...JOB_STATUSES.map((s) => q.counts[s])]);
  rows.push(['total', ...JOB_STATUSES.map((s) => totals[s])]);
  output.out(table(['QUEUE', ...COUNT_HEADERS], rows));
}

/** `loom queues pause Q` / `resume Q`. */
export async function pauseQueue(ctx: CommandContext, paused: boolean): Promise<void> {
  const queue = ctx.invocation.target!;
  if (paused) await ctx.queues.pause(queue);
  else await ctx.queues.resume(queue);
  const { output } = ctx;
  if (output.json) return printJson(output, { queue, paused });
  output.out(
    paused ? `paused queue ${queue}: every engine stops claiming from it within one poll interval (enqueue still works)\n` : `resumed queue ${queue}\n`,
  );
}
