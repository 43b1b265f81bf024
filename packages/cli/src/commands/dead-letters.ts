import type { DeadLetterFilter } from '@loom/core';
import { printJson, relative, table } from '../output.js';
import { RefusedError } from '../errors.js';
import type { CommandContext } from './context.js';

function filterOf(ctx: CommandContext): DeadLetterFilter {
  const { options } = ctx.invocation;
  const filter: DeadLetterFilter = {};
  if (options.name) filter.name = options.name;
  if (options.queue) filter.queue = options.queue;
  return filter;
}

/** `loom dlq ls`: newest death first (50 unless --limit). */
export async function listDeadLetters(ctx: CommandContext): Promise<void> {
  const letters = await ctx.deadLetters.list({ ...filterOf(ctx), limit: ctx.invocation.options.limit ?? 50 });
  const { output } = ctx;
  if (output.json) return printJson(output, letters);
  if (letters.length === 0) return output.out('no dead letters\n');
  output.out(
    table(
      ['ID', 'NAME', 'QUEUE', 'ATTEMPTS', 'DIED', 'REASON'],
      letters.map((d) => [d.id, d.job.name, d.job.queue, d.job.attempt, relative(d.diedAt, output.now), d.reason]),
    ),
  );
}

/** `loom dlq retry ID` or `loom dlq retry --all [--name N]`, with a progress line on stderr for the bulk. */
export async function retryDeadLetters(ctx: CommandContext): Promise<void> {
  const { output, invocation } = ctx;
  if (invocation.target !== undefined) {
    const id = await ctx.deadLetters.retry(invocation.target);
    if (output.json) printJson(output, { retried: id === null ? 0 : 1 });
    if (id === null) throw new RefusedError(`no dead letter ${invocation.target} (retried or purged already?)`);
    if (!output.json) output.out(`job ${id} is queued again\n`);
    return;
  }
  const progress = (handled: number) =>
    output.err(output.interactive ? `\rretrying dead letters: ${handled} handled` : `retrying dead letters: ${handled} handled\n`);
  let skipped: { id: string; reason: string }[] = [];
  const retried = await ctx.deadLetters.retry(filterOf(ctx), { onProgress: progress, onSkipped: (s) => (skipped = s) });
  if (output.interactive) output.err('\n');
  if (output.json) printJson(output, { retried, skipped });
  else output.out(`retried ${retried} dead letter${retried === 1 ? '' : 's'}\n`);
  if (skipped.length > 0) {
    if (!output.json) for (const s of skipped) output.err(`not retried ${s.id}: ${s.reason}\n`);
    throw new RefusedError(`${skipped.length} matching dead letter${skipped.length === 1 ? '' : 's'} could not be retried`);
  }
}

/** `loom dlq purge [--name N] --yes`. */
export async function purgeDeadLetters(ctx: CommandContext): Promise<void> {
  const purged = await ctx.deadLetters.purge(filterOf(ctx));
  if (ctx.output.json) return printJson(ctx.output, { purged });
  ctx.output.out(`purged ${purged} dead letter${purged === 1 ? '' : 's'}\n`);
}
