/**
 * configureFailPoint, the test command drivers' own test suites use to inject failures
 * (mongod accepts it with enableTestCommands; the emulator always does). See failpoints.ts.
 */
import type { CommandContext, CommandTable } from './context.js';
import type { Doc } from '../values.js';

function configureFailPoint(ctx: CommandContext): Doc {
  return ctx.engine.failPoints.configure(ctx.body.configureFailPoint, ctx.body.mode, ctx.body.data);
}

export const failPointCommands: CommandTable = {
  configureFailPoint: { run: configureFailPoint, fields: ['mode', 'data'], adminOnly: true },
};
