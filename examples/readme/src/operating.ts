import type { Loom } from '@loom/core';

/** What an operator (or an admin endpoint) does with jobs in production: OPERATIONS.md's examples. */
export async function operate(loom: Loom, previous: { next?: string }, id: string): Promise<void> {
  // Keyset-paginated, newest first. Filters are plain values, never query operators.
  const page = await loom.jobs.list({
    status: ['dead', 'queued'],
    name: 'send-welcome',
    limit: 50,
    cursor: previous.next, // absent on the first page
  });
  console.log(
    page.jobs.map((job) => `${job.id} ${job.status} ${job.attempt}/${job.maxAttempts}`),
    page.next,
  );

  await loom.jobs.cancel(id, { reason: 'customer asked' }); // running: aborted within one heartbeat, in any process
  await loom.jobs.retry(id); // dead or cancelled -> queued, same id, attempts reset
  await loom.jobs.remove(id); // finished jobs only

  await loom.queues.pause('emails'); // every instance stops claiming from it within one poll interval
  await loom.queues.resume('emails');
  console.log(await loom.queues.list()); // [{ name, paused, counts: { queued, running, ... }, oldestQueuedAt }]

  await loom.deadLetters.retry({ name: 'send-welcome' }); // bulk: all matching; returns the count
  await loom.schedules.trigger('nightly-report'); // one run now, outside the cron slots
}
