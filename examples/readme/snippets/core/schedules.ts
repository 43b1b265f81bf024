import { Job, type JobContext, type Loom } from '@loom/core';

declare const loom: Loom;
declare const listener: (event: unknown) => void;

@Job({ schedule: '*/5 * * * *' }) // UTC, catchUp 'latest', overlap 'skip'
class Heartbeat {
  async run(_: undefined, ctx: JobContext) {
    /* ctx.scheduledFor = the fire time */
  }
}

@Job({ schedule: { cron: '30 2 * * *', timezone: 'Europe/Berlin', payload: { kind: 'daily' }, catchUp: 'all', overlap: 'allow' } })
class NightlyReport {
  async run(_: { kind: string }) {
    /* ... */
  }
}

await loom.schedules.list(); // [{ name, cron, timezone, paused, lastFireAt, nextFireAt }]
await loom.schedules.pause('NightlyReport');
await loom.schedules.resume('NightlyReport');
loom.on('schedule:fired', listener); // also 'schedule:skipped', 'schedule:missed'

export { Heartbeat, NightlyReport };
