import { LoomError, type BulkAction, type BulkResult, type BulkTarget, type CleanStatus, type JobListFilter } from '@loom/core';
import { printJson, relative, table } from '../output.js';
import { RefusedError } from '../errors.js';
import type { CommandContext } from './context.js';
import { cancelJob, removeJob, retryJob } from './jobs.js';

/** How each action reads in a sentence: done, and would be done. */
const WORDS: Record<BulkAction, { done: string; would: string }> = {
  cancel: { done: 'cancelled', would: 'would cancel' },
  retry: { done: 'retried', would: 'would retry' },
  remove: { done: 'removed', would: 'would remove' },
  runNow: { done: 'made due now', would: 'would make due now' },
};

/** The filter of `--status`, `--name`, `--queue`. */
function filterOf(ctx: CommandContext): Omit<JobListFilter, 'limit' | 'cursor'> {
  const { options } = ctx.invocation;
  const filter: Omit<JobListFilter, 'limit' | 'cursor'> = {};
  if (options.status) filter.status = options.status;
  if (options.name) filter.name = options.name;
  if (options.queue) filter.queue = options.queue;
  return filter;
}

/** Whether the command acts on every job of a filter without `--yes` or `--dry-run`: it must be confirmed. */
export function needsConfirmation(ctx: Pick<CommandContext, 'invocation'>): boolean {
  const { name, targets, options } = ctx.invocation;
  if (options.yes || options.dryRun) return false;
  return name === 'jobs clean' || (targets === undefined && ['jobs cancel', 'jobs retry', 'jobs rm', 'jobs remove', 'jobs run-now'].includes(name));
}

/** Prints a result: counts, skips by reason, and the first jobs changed. */
function report(ctx: CommandContext, result: BulkResult, what: string): void {
  const { output } = ctx;
  if (output.json) return printJson(output, result);
  const words = WORDS[result.action];
  const plural = (n: number) => `${n} job${n === 1 ? '' : 's'}`;
  let text = `${result.dryRun ? words.would : words.done} ${plural(result.changed)} of ${result.matched} matched (${what})`;
  if (result.requested) text += `; ${result.requested} running: cancel requested, the engine running each ends it within one heartbeat`;
  if (result.cascaded) text += `; ${result.cascaded} children and dependents cancelled too`;
  text += result.dryRun ? '\ndry run: nothing was changed\n' : '\n';
  for (const skip of result.skippedBy) {
    text += `skipped ${plural(skip.count)}: ${skip.reason} (${skip.ids.join(', ')}${skip.count > skip.ids.length ? ', ...' : ''})\n`;
  }
  if (result.sample.length > 0) {
    const more = result.changed - result.sample.length;
    text += `\n${table(
      ['ID', 'NAME', 'QUEUE', 'STATUS', 'CREATED'],
      result.sample.map((j) => [j.id, j.name, j.queue, j.status, relative(j.createdAt, output.now)]),
    )}`;
    if (more > 0) text += `... and ${more} more\n`;
  }
  output.out(text);
}

/** Asks on the terminal whether to go on, after showing what would change. */
async function confirmed(ctx: CommandContext, preview: BulkResult, what: string): Promise<boolean> {
  report(ctx, preview, what);
  if (preview.changed === 0) throw new RefusedError('nothing to change');
  return (await ctx.confirm?.(`${WORDS[preview.action].done.replace(/^./, (c) => c.toUpperCase())} these ${preview.changed} jobs? [y/N] `)) === true;
}

/** Exit 1 when jobs named by id could not change, or a filter matched jobs none of which could. */
function settle(result: BulkResult, byIds: boolean): void {
  if (result.dryRun) return;
  if (byIds && result.skipped > 0) throw new RefusedError(`${result.skipped} of the jobs given could not be ${WORDS[result.action].done}`);
  if (!byIds && result.matched > 0 && result.changed === 0)
    throw new RefusedError(`none of the ${result.matched} matching jobs could be ${WORDS[result.action].done}`);
}

async function runBulk(ctx: CommandContext, action: BulkAction, apply: (target: BulkTarget, dryRun: boolean) => Promise<BulkResult>): Promise<void> {
  const { targets, options } = ctx.invocation;
  const target: BulkTarget = targets !== undefined ? { ids: targets } : { filter: filterOf(ctx) };
  const what = targets !== undefined ? `of ${targets.length} id${targets.length === 1 ? '' : 's'} given` : 'matching the filter';
  if (needsConfirmation(ctx)) {
    const preview = await apply(target, true);
    if (!(await confirmed(ctx, preview, what))) throw new RefusedError('nothing was changed');
  }
  const result = await apply(target, options.dryRun === true);
  report(ctx, result, what);
  settle(result, targets !== undefined);
}

/** One job, without a dry run: the single command as before (its output and exit codes). */
function single(ctx: CommandContext): boolean {
  const { targets, options } = ctx.invocation;
  return targets?.length === 1 && !options.dryRun;
}

/** `loom jobs cancel ID... | --status S --name N --queue Q [--dry-run] [--yes] [--reason R] [--children]`. */
export async function cancelJobs(ctx: CommandContext): Promise<void> {
  if (single(ctx)) return cancelJob(ctx);
  const { reason, children } = ctx.invocation.options;
  await runBulk(ctx, 'cancel', (target, dryRun) =>
    ctx.jobs.cancelMany(target, { dryRun, ...(reason !== undefined ? { reason } : {}), ...(children ? { children: true } : {}) }),
  );
}

/** `loom jobs retry ID... | filter`. */
export async function retryJobs(ctx: CommandContext): Promise<void> {
  if (single(ctx)) return retryJob(ctx);
  await runBulk(ctx, 'retry', (target, dryRun) => ctx.jobs.retryMany(target, { dryRun }));
}

/** `loom jobs rm ID... | filter` (also `jobs remove`). */
export async function removeJobs(ctx: CommandContext): Promise<void> {
  if (single(ctx)) return removeJob(ctx);
  await runBulk(ctx, 'remove', (target, dryRun) => ctx.jobs.removeMany(target, { dryRun }));
}

/** `loom jobs run-now ID... | filter`: delayed queued jobs due now. */
export async function runJobsNow(ctx: CommandContext): Promise<void> {
  const { output, invocation } = ctx;
  if (single(ctx)) {
    const id = invocation.target!;
    let result;
    try {
      result = await ctx.jobs.runNow(id);
    } catch (err) {
      if (LoomError.is(err, 'JOB_NOT_FOUND')) throw new RefusedError(`no job ${id}`);
      throw err;
    }
    if (output.json) printJson(output, result);
    if (!result.due)
      throw new RefusedError(`job ${id} is ${result.status}: only a queued job that is to run later (and not asleep in a workflow) can be run now`);
    if (!output.json) output.out(`job ${id} runs now\n`);
    return;
  }
  await runBulk(ctx, 'runNow', (target, dryRun) => ctx.jobs.runNowMany(target, { dryRun }));
}

/** `loom jobs clean --older-than 7d [--status completed[,dead,cancelled]] [--name N] [--queue Q] [--dry-run] [--yes]`. */
export async function cleanJobs(ctx: CommandContext): Promise<void> {
  const { options } = ctx.invocation;
  const cut = options.olderThan!;
  const olderThan = 'at' in cut ? cut.at : new Date(ctx.output.now.getTime() - cut.ms);
  const clean = (dryRun: boolean) =>
    ctx.jobs.clean({
      olderThan,
      dryRun,
      status: (options.status ?? ['completed']) as CleanStatus[],
      ...(options.name !== undefined ? { name: options.name } : {}),
      ...(options.queue !== undefined ? { queue: options.queue } : {}),
    });
  const what = `${(options.status ?? ['completed']).join(', ')}, finished before ${olderThan.toISOString()}`;
  if (needsConfirmation(ctx)) {
    const preview = await clean(true);
    if (!(await confirmed(ctx, preview, what))) throw new RefusedError('nothing was changed');
  }
  report(ctx, await clean(options.dryRun === true), what);
}
