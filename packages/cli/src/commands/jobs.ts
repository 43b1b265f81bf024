import { LoomError, type CancelOptions, type JobListFilter, type JobRecord } from '@loom/core';
import { printJson, relative, table } from '../output.js';
import { RefusedError } from '../errors.js';
import type { CommandContext } from './context.js';

/** `loom jobs ls`: one page, newest first; the next page's `--cursor` is printed under it. */
export async function listJobs(ctx: CommandContext): Promise<void> {
  const { options } = ctx.invocation;
  const filter: JobListFilter = {};
  if (options.status) filter.status = options.status;
  if (options.name) filter.name = options.name;
  if (options.queue) filter.queue = options.queue;
  if (options.limit) filter.limit = options.limit;
  if (options.cursor) filter.cursor = options.cursor;
  const page = await ctx.jobs.list(filter);
  const { output } = ctx;
  if (output.json) return printJson(output, page);
  if (page.jobs.length === 0) return output.out('no jobs\n');
  const rows = page.jobs.map((j) => [
    j.id,
    j.name,
    j.queue,
    j.cancelRequestedAt && j.status === 'running' ? 'running (cancel requested)' : j.status,
    `${j.attempt}/${j.maxAttempts}`,
    relative(j.createdAt, output.now),
    relative(j.updatedAt, output.now),
    j.deadReason ?? j.cancelReason,
  ]);
  output.out(table(['ID', 'NAME', 'QUEUE', 'STATUS', 'ATTEMPT', 'CREATED', 'UPDATED', 'REASON'], rows));
  if (page.next) output.out(`more: loom jobs ls --cursor ${page.next}${sameFilters(ctx)}\n`);
}

function sameFilters(ctx: CommandContext): string {
  const { options } = ctx.invocation;
  return [
    options.status ? ` --status ${options.status.join(',')}` : '',
    options.name ? ` --name ${JSON.stringify(options.name)}` : '',
    options.queue ? ` --queue ${JSON.stringify(options.queue)}` : '',
    options.limit ? ` --limit ${options.limit}` : '',
  ].join('');
}

async function mustGet(ctx: CommandContext, id: string): Promise<JobRecord> {
  const job = await ctx.jobs.get(id);
  if (!job) throw new RefusedError(`no job ${id}`);
  return job;
}

/** `loom jobs show ID`: the whole record. */
export async function showJob(ctx: CommandContext): Promise<void> {
  const job = await mustGet(ctx, ctx.invocation.target!);
  const { output } = ctx;
  if (output.json) return printJson(output, job);
  const at = (d: Date | undefined) => (d ? `${d.toISOString()} (${relative(d, output.now)})` : '-');
  const lines: [string, unknown][] = [
    ['id', job.id],
    ['name', job.name],
    ['queue', job.queue],
    ['status', job.cancelRequestedAt && job.status === 'running' ? `running, cancel requested ${relative(job.cancelRequestedAt, output.now)}` : job.status],
    ['attempt', `${job.attempt} of ${job.maxAttempts}`],
    ['priority', job.priority],
    ['run at', at(job.runAt)],
    ['created', at(job.createdAt)],
    ['updated', at(job.updatedAt)],
    ['started', at(job.startedAt)],
    ['finished', at(job.finishedAt)],
  ];
  if (job.idempotencyKey !== undefined) lines.push(['idempotency key', job.idempotencyKey]);
  if (job.parentId !== undefined) lines.push(['parent', job.parentId]);
  if (job.batchId !== undefined) lines.push(['batch', job.batchId]);
  if (job.batchCallback !== undefined) lines.push(['callback of batch', `${job.batchCallback.batchId} (on ${job.batchCallback.on})`]);
  if (job.dependsOn !== undefined) {
    const unmet = job.waitingFor?.dependencies;
    lines.push(['depends on', job.dependsOn.map((d) => (unmet?.includes(d) ? `${d} (waiting)` : d)).join(', ')]);
    if (job.onDependencyFailure !== undefined) lines.push(['on dep. failure', job.onDependencyFailure]);
  }
  if (job.dependents !== undefined) lines.push(['dependents', job.dependents.join(', ')]);
  if (job.lease) lines.push(['lease', `${job.lease.owner} until ${job.lease.until.toISOString()}`]);
  if (job.deadReason !== undefined) lines.push(['dead because', job.deadReason]);
  if (job.cancelReason !== undefined) lines.push(['cancel reason', job.cancelReason]);
  if (job.progress !== undefined) lines.push(['progress', JSON.stringify(job.progress)]);
  if (job.logs !== undefined && job.logs.length > 0) lines.push(['logs', `${job.logs.length} lines kept (loom jobs logs ${job.id})`]);
  lines.push(['payload', JSON.stringify(job.payload)]);
  if (job.result !== undefined) lines.push(['result', JSON.stringify(job.result)]);
  const width = Math.max(...lines.map(([k]) => k.length));
  let text = lines.map(([k, v]) => `${k.padEnd(width)}  ${String(v)}`).join('\n') + '\n';
  if (job.steps.length > 0)
    text += `\nsteps:\n${table(
      ['NAME', 'KIND', 'STATUS', 'AT'],
      job.steps.map((s) => [s.name, s.kind, s.status, relative(s.at, output.now)]),
    )}`;
  if (job.errors.length > 0)
    text += `\nerrors:\n${table(
      ['ATTEMPT', 'AT', 'ERROR'],
      job.errors.map((e) => [e.attempt, relative(e.at, output.now), `${e.name}${e.code ? ` [${e.code}]` : ''}: ${e.message}`]),
    )}`;
  output.out(text);
}

/**
 * `loom jobs logs ID`: the `ctx.log` lines the job kept (its tail, oldest first), one a line:
 * time, level, attempt, message and fields; `--json` prints them as an array.
 */
export async function showJobLogs(ctx: CommandContext): Promise<void> {
  const id = ctx.invocation.target!;
  const job = await mustGet(ctx, id);
  const { output } = ctx;
  const logs = job.logs ?? [];
  if (output.json) return printJson(output, logs);
  if (logs.length === 0) return output.out(`job ${id} kept no log lines (nothing was written to ctx.log, or not yet)\n`);
  const text = logs.map((l) => {
    const fields = l.fields && Object.keys(l.fields).length > 0 ? `  ${JSON.stringify(l.fields)}` : '';
    return `${l.at.toISOString()}  ${l.level.toUpperCase().padEnd(5)}  #${l.attempt}  ${l.msg.replace(/\r?\n/g, ' ')}${fields}`;
  });
  output.out(`${text.join('\n')}\n`);
}

/** Turns "no such job" into exit 1. */
async function orRefused<T>(run: () => Promise<T>, id: string): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (LoomError.is(err, 'JOB_NOT_FOUND')) throw new RefusedError(`no job ${id}`);
    throw err;
  }
}

/** `loom jobs cancel ID [--reason R] [--children]`. */
export async function cancelJob(ctx: CommandContext): Promise<void> {
  const id = ctx.invocation.target!;
  const { reason, children } = ctx.invocation.options;
  const options: CancelOptions = {};
  if (reason !== undefined) options.reason = reason;
  if (children) options.children = true;
  const result = await orRefused(() => ctx.jobs.cancel(id, options), id);
  const { output } = ctx;
  if (output.json) printJson(output, result);
  if (!result.cancelled) throw new RefusedError(`job ${id} is ${result.status}: nothing to cancel`);
  if (output.json) return;
  output.out(
    result.status === 'running'
      ? `cancel requested: job ${id} is running; the engine running it aborts it within one heartbeat and ends it cancelled\n`
      : `cancelled job ${id}\n`,
  );
  if (result.cascaded !== undefined) output.out(`cancelled ${result.cascaded} of its children and dependents\n`);
}

/** `loom jobs retry ID`: a dead or cancelled job back in its queue. */
export async function retryJob(ctx: CommandContext): Promise<void> {
  const id = ctx.invocation.target!;
  const result = await orRefused(() => ctx.jobs.retry(id), id);
  const { output } = ctx;
  if (output.json) printJson(output, result);
  if (!result.retried) throw new RefusedError(`job ${id} is ${result.status}: only dead or cancelled jobs can be retried`);
  if (!output.json) output.out(`job ${id} is queued again\n`);
}

/** `loom jobs rm ID`: deletes a finished job. */
export async function removeJob(ctx: CommandContext): Promise<void> {
  const id = ctx.invocation.target!;
  const result = await orRefused(() => ctx.jobs.remove(id), id);
  const { output } = ctx;
  if (output.json) printJson(output, result);
  if (!result.removed) throw new RefusedError(`job ${id} is ${result.status}: only finished jobs (completed, dead, cancelled) can be removed; cancel it first`);
  if (!output.json) output.out(`removed job ${id} (${result.status})\n`);
}

/** `loom jobs fork ID --from-step S [--payload JSON]`: a new job that keeps the steps before S and runs the rest. */
export async function forkJob(ctx: CommandContext): Promise<void> {
  const id = ctx.invocation.target!;
  const { fromStep, payload } = ctx.invocation.options;
  try {
    const fork = await ctx.jobs.fork(id, payload === undefined ? { fromStep: fromStep! } : { fromStep: fromStep!, payload });
    const { output } = ctx;
    if (output.json) return printJson(output, fork);
    output.out(`forked ${id} from step ${fromStep}: new job ${fork.id} (kept ${fork.keptSteps.length ? fork.keptSteps.join(', ') : 'no step'})\n`);
  } catch (err) {
    if (LoomError.is(err, 'JOB_NOT_FOUND')) throw new RefusedError(`no job ${id}`);
    throw err;
  }
}

/** `loom jobs export ID > run.json`: the run record (always JSON), for `replayRun` of `@loom/testing`. */
export async function exportJob(ctx: CommandContext): Promise<void> {
  const id = ctx.invocation.target!;
  try {
    ctx.output.out(`${JSON.stringify(await ctx.jobs.export(id), null, 2)}\n`);
  } catch (err) {
    if (LoomError.is(err, 'JOB_NOT_FOUND')) throw new RefusedError(`no job ${id}`);
    throw err;
  }
}
