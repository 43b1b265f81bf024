import { LoomError } from '@loom/core';
import { printJson, relative, table } from '../output.js';
import { RefusedError } from '../errors.js';
import type { CommandContext } from './context.js';

/** Turns an unknown or undescribed schedule into exit 1. */
async function orRefused<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (LoomError.is(err, 'SCHEDULE_NOT_FOUND')) throw new RefusedError(err.message);
    throw err;
  }
}

/** `loom schedules ls`. */
export async function listSchedules(ctx: CommandContext): Promise<void> {
  const schedules = await ctx.schedules.list();
  const { output } = ctx;
  if (output.json) return printJson(output, schedules);
  if (schedules.length === 0) return output.out('no schedules\n');
  const rows = schedules.map((s) => [
    s.name,
    s.cron,
    s.timezone,
    s.paused ? 'paused' : 'active',
    relative(s.lastFireAt, output.now),
    relative(s.nextFireAt, output.now),
  ]);
  output.out(table(['NAME', 'CRON', 'TIMEZONE', 'STATE', 'LAST FIRE', 'NEXT FIRE'], rows));
}

/** `loom schedules pause N` / `resume N` / `trigger N`. */
export async function steerSchedule(ctx: CommandContext, action: 'pause' | 'resume' | 'trigger'): Promise<void> {
  const name = ctx.invocation.target!;
  const { output } = ctx;
  if (action === 'trigger') {
    const { id } = await orRefused(() => ctx.schedules.trigger(name));
    if (output.json) return printJson(output, { schedule: name, jobId: id });
    return output.out(`triggered ${name}: job ${id} runs now\n`);
  }
  await orRefused(() => (action === 'pause' ? ctx.schedules.pause(name) : ctx.schedules.resume(name)));
  if (output.json) return printJson(output, { schedule: name, paused: action === 'pause' });
  output.out(action === 'pause' ? `paused schedule ${name}\n` : `resumed schedule ${name} (slots missed while paused are not run)\n`);
}
