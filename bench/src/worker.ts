/**
 * Child-process entry: runs the one scenario given as JSON in argv[2] and reports it (plus this
 * process's peak RSS) to the parent over IPC. To profile one scenario, run it by hand:
 * `node --cpu-prof bench/dist/worker.js '{"kind":"memory","jobs":20000,...}'`. It exits explicitly afterwards, since engine timers
 * or driver sockets must not keep a finished measurement alive.
 */
import type { ChildReport, ScenarioResult, ScenarioSpec } from './scenario.js';
import { agendaThroughput, loomBatched, loomThroughput } from './scenarios/throughput.js';
import { agendaLatency, loomLatency } from './scenarios/latency.js';
import { memoryThroughput } from './scenarios/memory.js';
import { claimCost } from './scenarios/claim-cost.js';
import { listCost } from './scenarios/list-cost.js';
import { bullmqLatency, bullmqThroughput } from './scenarios/bullmq.js';
import { flowClaimCost } from './scenarios/flow-claim-cost.js';
import { flowLimits } from './scenarios/flow-limits.js';
import { flowQueueCost } from './scenarios/flow-queue-cost.js';
import { sandboxCost } from './scenarios/sandbox.js';
import { flowCosts } from './scenarios/flow-costs.js';
import { scalingPoint } from './scenarios/scaling.js';
import { payloadCost } from './scenarios/payload.js';

function run(spec: ScenarioSpec): Promise<ScenarioResult> {
  switch (spec.kind) {
    case 'throughput':
      return spec.engine === 'loom' ? loomThroughput(spec) : agendaThroughput(spec);
    case 'batched':
      return loomBatched(spec);
    case 'latency':
      return spec.engine === 'loom' ? loomLatency(spec) : agendaLatency(spec);
    case 'memory':
      return memoryThroughput(spec);
    case 'claim-cost':
      return claimCost(spec);
    case 'list-cost':
      return listCost(spec);
    case 'bullmq-throughput':
      return bullmqThroughput(spec);
    case 'bullmq-latency':
      return bullmqLatency(spec);
    case 'flow-limits':
      return flowLimits(spec);
    case 'flow-claim-cost':
      return flowClaimCost(spec);
    case 'flow-costs':
      return flowCosts(spec);
    case 'flow-queue-cost':
      return flowQueueCost(spec);
    case 'sandbox':
      return sandboxCost(spec);
    case 'scaling':
      return scalingPoint(spec);
    case 'payload':
      return payloadCost(spec);
  }
}

/** Reports to the parent; run by hand (e.g. under `node --cpu-prof`), prints the report instead. */
function send(message: unknown, code: number): void {
  if (process.send) process.send(message, () => process.exit(code));
  else {
    process.stdout.write(`${JSON.stringify(message, null, 2)}\n`);
    process.exit(code);
  }
}

const spec = JSON.parse(process.argv[2]!) as ScenarioSpec;
run(spec).then(
  (result) => {
    const report: ChildReport = { ...result, maxRssMb: process.resourceUsage().maxRSS / 1024 };
    send({ ok: true, report }, 0);
  },
  (err: unknown) => send({ ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) }, 1),
);
