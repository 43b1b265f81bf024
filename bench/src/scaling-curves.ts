/**
 * The scaling group (`npm run bench -- --only scaling`, issue 33 item 7): which points are
 * measured, the curves built from their medians, and the SVG charts written beside the results.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchConfig } from './config.js';
import { prefixed, type EngineKey } from './collector.js';
import { renderLineChart, type LineChart } from './svg-chart.js';

/** One Loom point: engine processes × concurrency each × queues served. */
export interface LoomPoint {
  concurrency: number;
  queues: number;
  engines: number;
}

export const CONCURRENCIES = [1, 10, 50, 200] as const;
export const QUEUE_COUNTS = [1, 10, 100] as const;
export const ENGINE_COUNTS = [1, 2, 4] as const;
/** Concurrency of each engine on the queue and process curves. */
export const SCALING_CONCURRENCY = 50;

type CurveName = 'concurrency' | 'queues' | 'processes';

const loomPoint = (curve: CurveName, x: number): LoomPoint =>
  curve === 'concurrency'
    ? { concurrency: x, queues: 1, engines: 1 }
    : curve === 'queues'
      ? { concurrency: SCALING_CONCURRENCY, queues: x, engines: 1 }
      : { concurrency: SCALING_CONCURRENCY, queues: 1, engines: x };

/** The metric prefix of a Loom point (`scalingC50Q1E1`); points shared by two curves are measured once. */
export const loomPrefix = (p: LoomPoint): string => `scalingC${p.concurrency}Q${p.queues}E${p.engines}`;
/** The metric prefix of Agenda's and BullMQ's concurrency points (`scalingC50`). */
export const otherPrefix = (concurrency: number): string => `scalingC${concurrency}`;

/** Every distinct Loom point of the three curves, in measuring order. */
export function loomPoints(): LoomPoint[] {
  const all = [
    ...CONCURRENCIES.map((x) => loomPoint('concurrency', x)),
    ...QUEUE_COUNTS.map((x) => loomPoint('queues', x)),
    ...ENGINE_COUNTS.map((x) => loomPoint('processes', x)),
  ];
  return all.filter((p, i) => all.findIndex((q) => loomPrefix(q) === loomPrefix(p)) === i);
}

const METRICS = ['throughputJobsPerSec', 'workerCpuUsPerJob', 'serverCpuUsPerJob'] as const;
type Metric = (typeof METRICS)[number];

/** A curve as data: x values, and per engine the medians of each metric at each x (null: not measured). */
export interface Curve {
  x: number[];
  xLabel: string;
  engines: Partial<Record<EngineKey, { jobsPerPoint: number } & Record<Metric, (number | null)[]>>>;
}

/** The three curves from the medians of this run (and any merged one). */
export function scalingCurves(c: BenchConfig, medians: Record<string, Record<string, number>>): Record<CurveName, Curve> {
  const read = (engine: EngineKey, prefix: string, m: Metric): number | null => {
    const v = medians[engine]?.[prefixed(prefix, m)];
    return v === undefined || !Number.isFinite(v) ? null : v;
  };
  const series = (engine: EngineKey, xs: readonly number[], prefixOf: (x: number) => string, jobsPerPoint: number) => ({
    jobsPerPoint,
    ...(Object.fromEntries(METRICS.map((m) => [m, xs.map((x) => read(engine, prefixOf(x), m))])) as Record<Metric, (number | null)[]>),
  });
  const loom = (curve: CurveName, xs: readonly number[]) => series('loom', xs, (x) => loomPrefix(loomPoint(curve, x)), c.scalingJobs);
  const concurrency: Curve = {
    x: [...CONCURRENCIES],
    xLabel: 'concurrency (jobs at once, one engine, one queue)',
    engines: { loom: loom('concurrency', CONCURRENCIES) },
  };
  const agenda = series('agenda', CONCURRENCIES, otherPrefix, c.scalingAgendaJobs);
  if (agenda.throughputJobsPerSec.some((v) => v !== null)) concurrency.engines.agenda = agenda;
  const bullmq = series('bullmq', CONCURRENCIES, otherPrefix, c.scalingBullmqJobs);
  if (bullmq.throughputJobsPerSec.some((v) => v !== null)) concurrency.engines.bullmq = bullmq;
  return {
    concurrency,
    queues: {
      x: [...QUEUE_COUNTS],
      xLabel: `queues served (one engine, concurrency ${SCALING_CONCURRENCY})`,
      engines: { loom: loom('queues', QUEUE_COUNTS) },
    },
    processes: {
      x: [...ENGINE_COUNTS],
      xLabel: `engine processes (concurrency ${SCALING_CONCURRENCY} each, one queue)`,
      engines: { loom: loom('processes', ENGINE_COUNTS) },
    },
  };
}

const ENGINE_LABEL: Record<EngineKey, string> = { loom: 'Loom', agenda: 'Agenda', bullmq: 'BullMQ', 'loom-memory': 'Loom (MemoryStore)' };

const TITLES: Record<CurveName, string> = {
  concurrency: 'Throughput and CPU per job against concurrency',
  queues: 'Loom: throughput and CPU per job against queues served',
  processes: 'Loom: throughput and CPU per job against engine processes',
};

/** A curve as a chart: three panels (throughput, worker CPU per job, server CPU per job), a line per engine. */
export function curveChart(name: CurveName, curve: Curve, context: string): LineChart {
  const engines = Object.entries(curve.engines) as [EngineKey, NonNullable<Curve['engines'][EngineKey]>][];
  const label = (e: EngineKey, jobs: number): string => `${ENGINE_LABEL[e]} (${jobs.toLocaleString('en-US')} jobs)`;
  const panel = (m: Metric, yLabel: string) => ({
    yLabel,
    series: engines.map(([e, s]) => ({ label: label(e, s.jobsPerPoint), values: s[m].map((v) => v ?? undefined) })),
  });
  const described = engines
    .map(
      ([e, s]) =>
        `${ENGINE_LABEL[e]}: ` +
        curve.x
          .map(
            (x, i) =>
              `${x}: ${fmt(s.throughputJobsPerSec[i])} jobs/s, ${fmt(s.workerCpuUsPerJob[i])} µs worker CPU, ${fmt(s.serverCpuUsPerJob[i])} µs server CPU per job`,
          )
          .join('; '),
    )
    .join('. ');
  return {
    title: TITLES[name],
    description: `x: ${curve.xLabel}. ${described}. ${context}`,
    xLabel: curve.xLabel,
    x: curve.x,
    panels: [
      panel('throughputJobsPerSec', 'throughput (jobs/s)'),
      panel('workerCpuUsPerJob', 'worker CPU per job (µs)'),
      panel('serverCpuUsPerJob', 'server CPU per job (µs)'),
    ],
  };
}

const fmt = (v: number | null | undefined): string => (v === null || v === undefined ? 'not measured' : String(Math.round(v)));

/** Writes `scaling-<curve>.svg` (quick mode: `quick-scaling-<curve>.svg`) into `dir`; returns the paths. */
export function writeScalingCharts(dir: string, quick: boolean, curves: Record<CurveName, Curve>, context: string): string[] {
  return (Object.keys(curves) as CurveName[]).map((name) => {
    const file = join(dir, `${quick ? 'quick-' : ''}scaling-${name}.svg`);
    writeFileSync(file, renderLineChart(curveChart(name, curves[name], context)));
    return file;
  });
}
