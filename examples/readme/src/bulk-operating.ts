import type { Loom } from '@loom/core';

/** Acting on many jobs at once: ids or a jobs.list filter, with a dry run first. */
export async function operateInBulk(loom: Loom, ids: string[]): Promise<void> {
  const filter = { queue: 'emails', status: 'queued' as const, name: 'send-welcome' };
  const preview = await loom.jobs.cancelMany({ filter }, { dryRun: true }); // changes nothing
  console.log(preview.changed, preview.skippedBy); // would cancel N; skipped by reason
  await loom.jobs.cancelMany({ filter }, { reason: 'bad template' }); // every page of matches, 500 at a time
  await loom.jobs.retryMany({ ids }); // dead or cancelled ones among them
  await loom.jobs.runNowMany({ filter: { queue: 'emails', status: 'queued' } }); // delayed -> due now
  await loom.jobs.removeMany({ ids }); // finished ones among them
  await loom.jobs.clean({ olderThan: new Date(Date.now() - 7 * 86_400_000) }); // completed > 7 days ago
}
