import type { Loom } from '@loom/core';

declare const loom: Loom;

// Every started engine sharing the store, alive within its last few beats.
for (const w of await loom.workers.list()) {
  console.log(`${w.id} on ${w.host} (pid ${w.pid}, Loom ${w.version}, Node ${w.node}): ${w.queues.join(', ')}`);
  console.log(`  ${w.running} of ${w.concurrency} running (${w.runningJobIds.join(', ')}), ${w.state}, last seen ${w.lastSeenAt.toISOString()}`);
}
