/**
 * `npm run bench`: Loom against Agenda 6 on the same MongoDB, plus Loom on MemoryStore.
 * Every scenario runs in a child process of its own; each figure is the median of `runs` runs,
 * and the engines' runs are interleaved so a noisy machine disturbs them alike.
 * Prints a table and writes bench/results/latest.json (quick mode: quick.json).
 */
import { measureSharded } from './scenarios/sharded.js';
import { startCpuHogs } from './cpu-hogs.js';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem, platform, arch, release } from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runInChild } from './child-runner.js';
import { Collector, type EngineKey } from './collector.js';
import { PAYLOAD_KBS, readConfig, type BenchConfig, type Group } from './config.js';
import { openMongoTarget, type MongoTarget } from './mongo-target.js';
import { checkTargets, renderTable, renderTargets } from './report.js';
import type { ChildReport, ScenarioSpec } from './scenario.js';
import type { CommandCounts } from './command-counter.js';
import { packageVersion } from './versions.js';
import { openRedis } from './redis-target.js';
import { loomPoints, loomPrefix, otherPrefix, CONCURRENCIES, scalingCurves, writeScalingCharts } from './scaling-curves.js';

const log = (msg: string) => process.stdout.write(`[bench] ${msg}\n`);

/** Runs every selected group, filling `collector`; returns a command breakdown per scenario. */
async function measureAll(c: BenchConfig, target: MongoTarget | undefined, collector: Collector): Promise<Record<string, CommandCounts>> {
  const breakdown: Record<string, CommandCounts> = {};
  let seq = 0;
  const mongo = () => ({
    uri: target!.uri,
    db: `loom_bench_${process.pid}_${seq++}`,
    ...(target?.serverPid === undefined ? {} : { serverPid: target.serverPid }),
  });
  const execArgv = c.profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${c.profileDir}`];
  const run = async (spec: ScenarioSpec, label: string, r: number | undefined, extraArgv: string[] = []): Promise<ChildReport> => {
    const report = await runInChild(spec, [...execArgv, ...extraArgv]);
    collector.measured.add(label);
    const shown = Object.entries(report.metrics)
      .map(([k, v]) => `${k}=${Number.isInteger(v) ? v : v.toFixed(2)}`)
      .join(' ');
    log(`${label} ${r === undefined ? `(${c.runs} rounds)` : `run ${r + 1}/${c.runs}`}: ${shown} maxRSS=${report.maxRssMb.toFixed(0)}MB`);
    if (report.commands) breakdown[label] = report.commands;
    // Each run gives its notes again; a note the same in every run is kept once.
    for (const note of report.notes ?? []) {
      const line = `${label}: ${note}`;
      if (!collector.notes.includes(line)) collector.notes.push(line);
    }
    return report;
  };
  const timeoutMs = c.timeoutMs;

  if (c.groups.includes('memory')) {
    // The same run as an application without @opentelemetry/api (its import fails) and as one with
    // an OpenTelemetry SDK registered: what telemetry costs per job, off and on.
    const otel = (file: string) => ['--import', fileURLToPath(new URL(`../../packages/core/bench/${file}`, import.meta.url))];
    const variants = [
      { label: 'memory/loom', prefix: '', argv: [] },
      { label: 'memory/loom (no @opentelemetry/api)', prefix: 'noOtelApi', argv: otel('hide-otel-api.mjs') },
      { label: 'memory/loom (OpenTelemetry SDK registered)', prefix: 'otelSdk', argv: otel('with-otel-sdk.mjs') },
    ];
    for (let r = 0; r < c.runs; r++) {
      for (const v of variants) {
        const rep = await run({ kind: 'memory', jobs: c.memoryJobs, concurrency: c.concurrency, chunk: c.memoryChunk, timeoutMs }, v.label, r, v.argv);
        collector.add('loom-memory', v.prefix === '' ? { ...rep.metrics, peakRssMb: rep.maxRssMb } : { cpuUsPerJob: rep.metrics.cpuUsPerJob! }, v.prefix);
      }
    }
  }
  if (c.groups.includes('throughput')) {
    for (let r = 0; r < c.runs; r++) {
      for (const engine of ['loom', 'agenda'] as const) {
        const rep = await run(
          { kind: 'throughput', engine, jobs: c.throughputJobs, concurrency: c.concurrency, timeoutMs, ...mongo() },
          `throughput/${engine}`,
          r,
        );
        collector.add(engine, { ...rep.metrics, peakRssMb: rep.maxRssMb });
      }
    }
  }
  if (c.groups.includes('batched')) {
    for (let r = 0; r < c.runs; r++) {
      const rep = await run(
        { kind: 'batched', jobs: c.throughputJobs, concurrency: c.concurrency, chunk: c.batchChunk, timeoutMs, ...mongo() },
        'batched/loom',
        r,
      );
      collector.add('loom', rep.metrics, 'batched');
    }
  }
  if (c.groups.includes('latency')) {
    const variants: { engine: 'loom' | 'agenda'; processEveryMs?: number; prefix: string; label: string }[] = [
      { engine: 'loom', prefix: '', label: 'latency/loom' },
      { engine: 'agenda', prefix: '', label: 'latency/agenda (processEvery default)' },
      { engine: 'agenda', processEveryMs: c.agendaFastPollMs, prefix: 'fastPoll', label: `latency/agenda (processEvery ${c.agendaFastPollMs} ms)` },
    ];
    for (let r = 0; r < c.runs; r++) {
      for (const v of variants) {
        const spec: ScenarioSpec = { kind: 'latency', engine: v.engine, jobs: c.latencyJobs, ratePerSec: c.latencyRatePerSec, timeoutMs, ...mongo() };
        if (v.processEveryMs !== undefined) spec.processEveryMs = v.processEveryMs;
        const rep = await run(spec, v.label, r);
        collector.add(v.engine, rep.metrics, v.prefix);
      }
    }
  }
  if (c.groups.includes('latency-loaded')) {
    // Issue 33: the same steady 20 jobs/s, with busy processes spinning beside the engine and its
    // server (two: both cores of this machine), as on a shared host. Loom, and BullMQ beside it
    // when redis-server is on PATH; not Agenda, whose polling sets its latency.
    const redis = await openRedis(process.env);
    if (!redis.available) collector.notes.push(`latency-loaded/bullmq: skipped: ${redis.reason}`);
    const hogs = startCpuHogs(c.latencyHogs);
    log(`latency-loaded: ${hogs.count} CPU hogs started`);
    try {
      for (let r = 0; r < c.runs; r++) {
        const spec: ScenarioSpec = { kind: 'latency', engine: 'loom', jobs: c.latencyJobs, ratePerSec: c.latencyRatePerSec, timeoutMs, ...mongo() };
        const rep = await run(spec, `latency-loaded/loom (${hogs.count} CPU hogs)`, r);
        collector.add('loom', rep.metrics, 'loaded');
        if (redis.available) {
          const { port: redisPort, pid: redisPid } = redis.target;
          const bull: ScenarioSpec = { kind: 'bullmq-latency', jobs: c.latencyJobs, ratePerSec: c.latencyRatePerSec, timeoutMs, redisPort, redisPid };
          const b = await run(bull, `latency-loaded/bullmq (${hogs.count} CPU hogs)`, r);
          collector.add('bullmq', b.metrics, 'loaded');
        }
      }
    } finally {
      await hogs.stop();
      if (redis.available) await redis.target.stop();
    }
  }
  if (c.groups.includes('claim')) {
    // One child: both collections are loaded once, then `runs` rounds of claims alternate between them.
    const spec: ScenarioSpec = {
      kind: 'claim-cost',
      small: c.claimSmall,
      large: c.claimLarge,
      blocked: c.claimBlocked,
      loadBudgetMs: c.claimLoadBudgetMs,
      claims: c.claimsPerRound,
      rounds: c.runs,
      timeoutMs: timeoutMs + c.claimLoadBudgetMs,
      ...mongo(),
    };
    const rep = await run(spec, 'claim-cost/loom', undefined);
    collector.add('loom', rep.metrics);
  }
  if (c.groups.includes('list')) {
    // The same sizes as the claim cost: a status page with 1,000 vs 1,000,000 completed jobs.
    const spec: ScenarioSpec = {
      kind: 'list-cost',
      small: c.claimSmall,
      large: c.claimLarge,
      loadBudgetMs: c.claimLoadBudgetMs,
      reps: Math.max(5, Math.floor(c.claimsPerRound / 10)),
      rounds: c.runs,
      timeoutMs: timeoutMs + c.claimLoadBudgetMs,
      ...mongo(),
    };
    const rep = await run(spec, 'list-cost/loom', undefined);
    collector.add('loom', rep.metrics);
  }
  if (c.groups.includes('bullmq')) await measureBullmq(c, collector, run);
  if (c.groups.includes('sharded')) {
    // In this process: the emulators it compares (sharded and not) are its own, started and stopped here.
    for (let r = 0; r < c.runs; r++) {
      const rep = await measureSharded({
        jobs: c.quick ? 1_000 : 10_000,
        partitions: 16,
        shards: 4,
        concurrency: c.concurrency,
        chunk: c.batchChunk,
        idleSeconds: c.quick ? 2 : 5,
        timeoutMs,
      });
      collector.measured.add('sharded/loom');
      log(
        `sharded/loom run ${r + 1}/${c.runs}: ${Object.entries(rep.metrics)
          .map(([k, v]) => `${k}=${v.toFixed(3)}`)
          .join(' ')}`,
      );
      for (const note of rep.notes) collector.notes.push(`sharded/loom: ${note}`);
      collector.add('loom', rep.metrics, 'sharded');
    }
  }
  if (c.groups.includes('flow')) {
    // Limits across engine processes (each run starts its own), then what limits add to a claim.
    for (let r = 0; r < c.runs; r++) {
      // Three phases (rate, global, global with kills): a timeout each, and the rate run's length.
      const spec: ScenarioSpec = {
        kind: 'flow-limits',
        engines: c.flowEngines,
        rateSeconds: c.flowRateSeconds,
        globalJobs: c.flowGlobalJobs,
        timeoutMs: 3 * timeoutMs + c.flowRateSeconds * 1_000,
        ...mongo(),
      };
      const rep = await run(spec, 'flow-limits/loom', r);
      collector.add('loom', rep.metrics);
    }
    const spec: ScenarioSpec = { kind: 'flow-claim-cost', claims: Math.max(10, Math.floor(c.claimsPerRound / 2)), rounds: c.runs, timeoutMs, ...mongo() };
    const rep = await run(spec, 'flow-claim-cost/loom', undefined);
    collector.add('loom', rep.metrics);
    const queueSpec: ScenarioSpec = { kind: 'flow-queue-cost', jobs: c.flowQueueJobs, concurrency: 10, rounds: c.runs, timeoutMs, ...mongo() };
    const queueRep = await run(queueSpec, 'flow-queue-cost/loom', undefined);
    collector.add('loom', queueRep.metrics);
  }
  if (c.groups.includes('sandbox')) {
    for (let r = 0; r < c.runs; r++) {
      const rep = await run({ kind: 'sandbox', burnMs: c.sandboxBurnMs, noopJobs: c.sandboxNoopJobs, timeoutMs }, 'sandbox/loom', r);
      collector.add('loom-memory', rep.metrics);
    }
  }
  if (c.groups.includes('dag')) {
    // Flows on MongoDB (issue 31): what an edge, a batch member and a batch handler cost.
    for (let r = 0; r < c.runs; r++) {
      const spec: ScenarioSpec = { kind: 'flow-costs', jobs: c.quick ? 1_000 : 2_000, concurrency: c.concurrency, timeoutMs, ...mongo() };
      const rep = await run(spec, 'flow-costs/loom', r);
      collector.add('loom', rep.metrics);
    }
  }
  if (c.groups.includes('scaling')) await measureScaling(c, collector, run, mongo);
  if (c.groups.includes('payload')) {
    // Issue 33 item 4: 10 KiB, 100 KiB and 1 MiB payloads, with MongoStore's default threshold
    // (256 KiB: only 1 MiB is offloaded), with a 1 KiB one (every size offloaded), and 1 MiB with
    // offloading off (`offloadThreshold: false`: inline, as before issue 33).
    for (let r = 0; r < c.runs; r++) {
      for (const kb of PAYLOAD_KBS) {
        for (const mode of kb > 256 ? (['', 'Offloaded', 'Inline'] as const) : (['', 'Offloaded'] as const)) {
          const spec: ScenarioSpec = {
            kind: 'payload',
            payloadKb: kb,
            jobs: c.payloadJobs[kb],
            concurrency: c.concurrency,
            claims: c.quick ? 10 : 50,
            listReps: c.quick ? 5 : 20,
            ...(mode === 'Offloaded' ? { offloadThreshold: 1024 } : mode === 'Inline' ? { offloadThreshold: false } : {}),
            timeoutMs,
            ...mongo(),
          };
          const rep = await run(
            spec,
            `payload/loom ${kb} KiB${mode === 'Offloaded' ? ' (threshold 1 KiB)' : mode === 'Inline' ? ' (offloadThreshold: false)' : ''}`,
            r,
          );
          collector.add('loom', { ...rep.metrics, peakRssMb: rep.maxRssMb }, `payload${kb}k${mode}`);
        }
      }
    }
  }
  return breakdown;
}

/**
 * The scaling curves (issue 33 item 7): Loom's points (concurrency, queues served, engine
 * processes), then Agenda's and BullMQ's on the concurrency curve (BullMQ when redis-server is on
 * PATH), each point a fresh database or queue, the rounds interleaved like the other groups.
 */
async function measureScaling(
  c: BenchConfig,
  collector: Collector,
  run: (spec: ScenarioSpec, label: string, r: number) => Promise<ChildReport>,
  mongo: () => { uri: string; db: string; serverPid?: number },
): Promise<void> {
  const redis = await openRedis(process.env);
  if (!redis.available) {
    collector.skipped.bullmq = redis.reason;
    collector.notes.push(`scaling/bullmq: skipped: ${redis.reason}`);
    log(`BullMQ skipped: ${redis.reason}`);
  } else {
    collector.redisVersion = redis.target.version;
  }
  try {
    for (let r = 0; r < c.runs; r++) {
      for (const p of loomPoints()) {
        const spec: ScenarioSpec = { kind: 'scaling', jobs: c.scalingJobs, ...p, timeoutMs: c.timeoutMs, ...mongo() };
        const rep = await run(spec, `scaling/loom c=${p.concurrency} queues=${p.queues} engines=${p.engines}`, r);
        collector.add('loom', rep.metrics, loomPrefix(p));
      }
      for (const concurrency of CONCURRENCIES) {
        const a = await run(
          { kind: 'throughput', engine: 'agenda', jobs: c.scalingAgendaJobs, concurrency, timeoutMs: c.timeoutMs, ...mongo() },
          `scaling/agenda c=${concurrency}`,
          r,
        );
        collector.add('agenda', pick(a.metrics), otherPrefix(concurrency));
        if (!redis.available) continue;
        const b = await run(
          {
            kind: 'bullmq-throughput',
            jobs: c.scalingBullmqJobs,
            concurrency,
            timeoutMs: c.timeoutMs,
            redisPort: redis.target.port,
            redisPid: redis.target.pid,
          },
          `scaling/bullmq c=${concurrency}`,
          r,
        );
        collector.add('bullmq', pick(b.metrics), otherPrefix(concurrency));
      }
    }
  } finally {
    if (redis.available) await redis.target.stop();
  }
  collector.notes.push(
    `scaling: ${c.scalingJobs} jobs per Loom point, ${c.scalingAgendaJobs} per Agenda point (it runs ~50 jobs/s), ${c.scalingBullmqJobs} per BullMQ point`,
  );
}

/** The figures a scaling curve shows. */
function pick(m: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = { throughputJobsPerSec: m.throughputJobsPerSec!, workerCpuUsPerJob: m.workerCpuUsPerJob! };
  if (m.serverCpuUsPerJob !== undefined) out.serverCpuUsPerJob = m.serverCpuUsPerJob;
  return out;
}

/**
 * BullMQ beside us, when redis-server is on PATH: the benchmark starts one on a free local port
 * for these runs (the same jobs, concurrency and rate as Loom's and Agenda's runs), else records why not.
 */
async function measureBullmq(c: BenchConfig, collector: Collector, run: (spec: ScenarioSpec, label: string, r: number) => Promise<ChildReport>): Promise<void> {
  const redis = await openRedis(process.env);
  if (!redis.available) {
    collector.skipped.bullmq = redis.reason;
    collector.notes.push(`bullmq: skipped: ${redis.reason}`);
    log(`BullMQ skipped: ${redis.reason}`);
    return;
  }
  const { port: redisPort, pid: redisPid, version } = redis.target;
  collector.redisVersion = version;
  log(`Redis for BullMQ: redis-server ${version} on 127.0.0.1:${redisPort}`);
  try {
    for (let r = 0; r < c.runs; r++) {
      const t = await run(
        { kind: 'bullmq-throughput', jobs: c.throughputJobs, concurrency: c.concurrency, timeoutMs: c.timeoutMs, redisPort, redisPid },
        'throughput/bullmq',
        r,
      );
      collector.add('bullmq', { ...t.metrics, peakRssMb: t.maxRssMb });
      const l = await run(
        { kind: 'bullmq-latency', jobs: c.latencyJobs, ratePerSec: c.latencyRatePerSec, timeoutMs: c.timeoutMs, redisPort, redisPid },
        'latency/bullmq',
        r,
      );
      collector.add('bullmq', l.metrics);
    }
  } finally {
    await redis.target.stop();
  }
}

/** Every figure the selected groups must produce, so a broken scenario cannot pass silently. */
function expectedMetrics(c: Pick<BenchConfig, 'groups'> & { bullmqSkipped: boolean }): [EngineKey, string][] {
  const want: [EngineKey, string][] = [];
  if (c.groups.includes('memory'))
    want.push(
      ['loom-memory', 'jobsPerSec'],
      ['loom-memory', 'jobsPerCpuSec'],
      ['loom-memory', 'peakRssMb'],
      ['loom-memory', 'noOtelApiCpuUsPerJob'],
      ['loom-memory', 'otelSdkCpuUsPerJob'],
    );
  if (c.groups.includes('throughput'))
    for (const e of ['loom', 'agenda'] as const) want.push([e, 'throughputJobsPerSec'], [e, 'throughputCommandsPerJob'], [e, 'peakRssMb']);
  if (c.groups.includes('batched')) want.push(['loom', 'batchedThroughputJobsPerSec'], ['loom', 'batchedThroughputCommandsPerJob']);
  if (c.groups.includes('latency'))
    want.push(
      ['loom', 'latencyP50Ms'],
      ['loom', 'latencyP99Ms'],
      ['loom', 'coldRoundTripP50Ms'],
      ['loom', 'lifecycleCommandsPerJob'],
      ['loom', 'lifecycleJobCommandsPerJob'],
      ['agenda', 'latencyP50Ms'],
      ['agenda', 'fastPollLatencyP50Ms'],
      ['agenda', 'lifecycleCommandsPerJob'],
    );
  if (c.groups.includes('latency-loaded')) want.push(['loom', 'loadedLatencyP50Ms'], ['loom', 'loadedLatencyP99Ms']);
  if (c.groups.includes('claim')) want.push(['loom', 'claimSmallMs'], ['loom', 'claimLargeMs'], ['loom', 'claimBlockedMs']);
  if (c.groups.includes('list')) want.push(['loom', 'listCompletedSmallMs'], ['loom', 'listCompletedLargeMs'], ['loom', 'listLargeOverSmall']);
  if (c.groups.includes('bullmq') && !c.bullmqSkipped)
    want.push(['bullmq', 'throughputJobsPerSec'], ['bullmq', 'workerCpuUsPerJob'], ['bullmq', 'latencyP50Ms'], ['bullmq', 'latencyP99Ms']);
  if (c.groups.includes('flow'))
    want.push(
      ['loom', 'flowRateObservedPerSec'],
      ['loom', 'flowRateMaxIn1s'],
      ['loom', 'flowGlobalPeak'],
      ['loom', 'flowGlobalKillPeak'],
      ['loom', 'flowClaimGlobalBatch1OverPlain'],
      ['loom', 'flowClaimGroupBatch10OverPlain'],
      ['loom', 'flowQueueGlobalClaimOverPlain'],
      ['loom', 'flowQueueRateClaimOverPlain'],
      ['loom', 'flowQueueGroupClaimOverPlain'],
    );
  if (c.groups.includes('sandbox'))
    want.push(
      ['loom-memory', 'sandboxLoopDelayP99Ms'],
      ['loom-memory', 'inThreadLoopDelayP99Ms'],
      ['loom-memory', 'sandboxNoopUsPerJob'],
      ['loom-memory', 'inThreadNoopUsPerJob'],
    );
  if (c.groups.includes('payload'))
    for (const kb of PAYLOAD_KBS)
      for (const mode of ['', 'Offloaded'])
        for (const m of ['ThroughputJobsPerSec', 'WorkerCpuUsPerJob', 'PeakRssMb', 'ClaimJobsReplyBytes', 'ListReplyBytes'])
          want.push(['loom', `payload${kb}k${mode}${m}`]);
  if (c.groups.includes('dag'))
    want.push(
      ['loom', 'flowCostEnqueueCommandsPerEdge'],
      ['loom', 'flowCostProcessServerUsPerEdge'],
      ['loom', 'flowCostEnqueueCommandsPerMember'],
      ['loom', 'flowCostProcessServerUsPerMember'],
      ['loom', 'flowCostProcessCommandsPerEdge'],
      ['loom', 'flowCostProcessCommandsPerMember'],
      ['loom', 'flowCostBatchHandlerJobsPerSec'],
      ['loom', 'flowCostSingleJobsPerSec'],
      ['loom', 'flowCostDagJobsPerSec'],
      ['loom', 'flowCostBatchMembersPerSec'],
    );
  return want;
}

/** What `--merge` needs of an earlier results file. */
interface EarlierResults {
  generatedAt: string;
  mode: string;
  config: { groups: Group[] };
  samples: Record<string, Record<string, number[]>>;
  commandsByScenario: Record<string, CommandCounts>;
  notes: string[];
  parts?: { generatedAt: string; groups: Group[] }[];
}

function readEarlier(c: BenchConfig): EarlierResults {
  const earlier = JSON.parse(readFileSync(c.merge!, 'utf8')) as EarlierResults;
  const mode = c.quick ? 'quick' : 'full';
  if (earlier.mode !== mode) throw new Error(`--merge ${c.merge}: it is a ${earlier.mode} run and this one is ${mode}; merge runs of one mode only`);
  return earlier;
}

function versions(): Record<string, string> {
  const names = ['@loom/core', '@loom/mongo-store', '@loom/mongo-emulator', 'agenda', '@agendajs/mongo-backend', 'mongodb', 'bullmq', 'ioredis'];
  return Object.fromEntries(names.map((n) => [n, packageVersion(n)]));
}

function machine(): Record<string, unknown> {
  const cpu = cpus();
  return {
    cpuModel: cpu[0]?.model ?? 'unknown',
    cpus: cpu.length,
    totalMemoryGb: Math.round(totalmem() / 2 ** 30),
    platform: platform(),
    arch: arch(),
    kernel: release(),
    node: process.version,
    loadAverage1m: loadavg()[0],
  };
}

async function main(): Promise<void> {
  const c = readConfig(process.argv.slice(2), process.env);
  const needsMongo = c.groups.some((g) => g !== 'memory' && g !== 'bullmq' && g !== 'sandbox');
  log(`${c.quick ? 'QUICK mode (small counts, for smoke tests only)' : 'full run'}; ${c.runs} run(s) per figure; groups: ${c.groups.join(', ')}`);
  const target = needsMongo ? await openMongoTarget(process.env, c.profileDir) : undefined;
  if (c.profileDir !== undefined)
    log(`CPU profiles of every child process (and the emulator) go to ${c.profileDir}; read one with node bench/dist/profile-summary.js FILE`);
  if (target) log(`MongoDB: ${target.shownUri} (${target.kind}, server ${target.serverVersion}): ${target.note}`);
  const collector = new Collector();
  const startedAt = new Date();
  const loadBefore = loadavg()[0];
  let breakdown: Record<string, CommandCounts>;
  try {
    breakdown = await measureAll(c, target, collector);
  } finally {
    await target?.stop();
  }
  const earlier = c.merge === undefined ? undefined : readEarlier(c);
  if (earlier) {
    collector.mergeEarlier(earlier.samples);
    breakdown = { ...earlier.commandsByScenario, ...breakdown };
    // Notes are "label: text"; those of scenarios measured again are out of date.
    collector.notes.unshift(...earlier.notes.filter((note) => !collector.measured.has(note.slice(0, note.indexOf(': ')))));
    log(`merged the figures of ${c.merge} (${earlier.generatedAt}, groups ${earlier.config.groups.join(', ')}) that this run did not measure`);
  }
  const groups = [...new Set([...(earlier?.config.groups ?? []), ...c.groups])];
  const medians = collector.medians();
  const targets = checkTargets(medians);
  // Only this run's groups: merged ones were checked when they were measured, and a figure added
  // to a scenario since then is not missing from an earlier run.
  const missing = expectedMetrics({ ...c, bullmqSkipped: collector.skipped.bullmq !== undefined }).filter(([e, m]) => !Number.isFinite(medians[e]?.[m]));

  const results = {
    generatedAt: new Date().toISOString(),
    durationSec: Math.round((Date.now() - startedAt.getTime()) / 1000),
    mode: c.quick ? 'quick' : 'full',
    runsPerFigure: c.runs,
    config: { ...c, groups },
    machine: { ...machine(), loadAverage1mAtStart: loadBefore },
    parts: [
      ...(earlier ? (earlier.parts ?? [{ generatedAt: earlier.generatedAt, groups: earlier.config.groups }]) : []),
      { generatedAt: new Date().toISOString(), groups: c.groups },
    ],
    versions: versions(),
    mongodb: target ? { kind: target.kind, uri: target.shownUri, serverVersion: target.serverVersion, note: target.note } : null,
    engines: medians,
    /** Engines not measured in this run, and why (BullMQ without redis-server on PATH). */
    skipped: collector.skipped,
    redis:
      collector.redisVersion === undefined
        ? null
        : { server: `redis-server ${collector.redisVersion}`, note: 'started by the benchmark for BullMQ, in memory (no snapshots, no append-only file)' },
    samples: collector.all(),
    commandsByScenario: breakdown,
    targets,
    notes: collector.notes,
    /** The scaling curves (x values, medians per engine), drawn as bench/results/scaling-*.svg. */
    ...(groups.includes('scaling') ? { scaling: scalingCurves(c, medians) } : {}),
  };
  mkdirSync(dirname(c.out), { recursive: true });
  writeFileSync(`${c.out}.tmp`, `${JSON.stringify(results, null, 2)}\n`);
  renameSync(`${c.out}.tmp`, c.out);

  if (c.groups.includes('scaling')) {
    const load = loadavg().map((l) => l.toFixed(1));
    const context = `Measured ${results.generatedAt.slice(0, 16)} UTC, ${c.quick ? 'quick mode (smoke test), ' : ''}medians of ${c.runs} run(s), MongoDB: ${target?.kind ?? 'none'}; load average at the end ${load.join(', ')} on ${cpus().length} CPUs: indicative.`;
    for (const file of writeScalingCharts(dirname(c.out), c.quick, scalingCurves(c, medians), context)) log(`chart written to ${file}`);
  }
  process.stdout.write(`\n${renderTable(c, medians, collector.skipped)}\n\n`);
  if (target)
    process.stdout.write(
      `MongoDB: ${target.kind === 'emulator' ? 'the Loom emulator (separate process); these figures compare engines, not MongoDB' : target.shownUri}\n`,
    );
  process.stdout.write(`Medians of ${c.runs} run(s). Targets:\n${renderTargets(targets)}\n`);
  for (const note of collector.notes) process.stdout.write(`note: ${note}\n`);
  process.stdout.write(`Results written to ${c.out}\n`);
  if (missing.length > 0) {
    process.stderr.write(`[bench] missing figures: ${missing.map(([e, m]) => `${e}.${m}`).join(', ')}\n`);
    process.exitCode = 1;
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`[bench] failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
