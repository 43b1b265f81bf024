import { printJson, relative } from '../output.js';
import { RefusedError } from '../errors.js';
import type { CommandContext } from './context.js';

/** `loom batches show ID`: a batch's counts and its failed members, read from the store (never its other members). */
export async function showBatch(ctx: CommandContext): Promise<void> {
  const id = ctx.invocation.target!;
  const [batch, failed] = await Promise.all([ctx.store.getBatch(id), ctx.store.batchFailures(id)]);
  if (!batch) throw new RefusedError(`no batch ${id}`);
  const { output } = ctx;
  if (output.json) return printJson(output, { ...batch, failedJobIds: failed });
  const at = (d: Date | undefined) => (d ? `${d.toISOString()} (${relative(d, output.now)})` : '-');
  const lines: [string, unknown][] = [
    ['id', batch.id],
    ['total', batch.total],
    ['completed', batch.completed],
    ['dead', batch.dead],
    ['cancelled', batch.cancelled],
    ['pending', batch.pending],
    ['created', at(batch.createdAt)],
    ['finished', at(batch.finishedAt)],
  ];
  if (failed.length > 0) lines.push(['failed jobs', failed.join(', ')]);
  const width = Math.max(...lines.map(([k]) => k.length));
  output.out(lines.map(([k, v]) => `${k.padEnd(width)}  ${String(v)}`).join('\n') + '\n');
}
