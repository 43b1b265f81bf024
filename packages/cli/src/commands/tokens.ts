import { LoomError } from '@loom/core';
import { printJson } from '../output.js';
import { RefusedError } from '../errors.js';
import type { CommandContext } from './context.js';

/**
 * `loom tokens complete ID [--json OUTPUT]` / `loom tokens reject ID [--reason R]`: settles a wait
 * token; its run resumes at the next poll of an engine. A token settled before changes nothing and
 * says so (exit 0: the decision stands).
 */
export async function settleToken(ctx: CommandContext, action: 'complete' | 'reject'): Promise<void> {
  const id = ctx.invocation.target!;
  const { options } = ctx.invocation;
  let result;
  try {
    result = action === 'complete' ? await ctx.tokens.complete(id, options.output) : await ctx.tokens.reject(id, options.reason);
  } catch (err) {
    if (LoomError.is(err, 'WAIT_TOKEN_NOT_FOUND')) throw new RefusedError(`no wait token ${id}`);
    throw err;
  }
  const { output } = ctx;
  if (output.json) return printJson(output, { id, ...result });
  if (result.completed) output.out(`token ${id} ${result.status}: its run resumes\n`);
  else if (result.status === 'cancelled') output.out(`token ${id} is cancelled (${result.reason ?? 'its job ended'}): nothing resumes, nothing changed\n`);
  else output.out(`token ${id} was already ${result.status}: nothing changed\n`);
}
