import { parseArgs } from 'node:util';
import { decodeCursor, JOB_STATUSES, MAX_BULK_IDS, MAX_JOB_PAGE, toMs, type JobStatus } from '@loom/core';
import { UsageError } from './errors.js';

/** The global options, valid with every command. */
export interface GlobalOptions {
  uri?: string;
  database?: string;
  prefix?: string;
  json: boolean;
}

/** One parsed and checked command: `name` is the command words, `target` its argument (an id, a queue, a schedule). */
export interface Invocation {
  name: CommandName;
  target?: string;
  /** The job ids of a bulk action (`jobs cancel ID ID ...`); absent with a filter or one id. */
  targets?: string[];
  options: CommandOptions;
  global: GlobalOptions;
}

export interface CommandOptions {
  status?: JobStatus[];
  name?: string;
  queue?: string;
  limit?: number;
  cursor?: string;
  reason?: string;
  all?: boolean;
  yes?: boolean;
  /** `jobs fork ID --from-step S`. */
  fromStep?: string;
  /** `jobs fork ID --payload JSON`, parsed. */
  payload?: unknown;
  /** `tokens complete ID --json VALUE`: the token's output, parsed. */
  output?: unknown;
  /** `jobs cancel --children`: also its children and dependents, recursively. */
  children?: boolean;
  /** Bulk actions and `jobs clean`: print what would change, change nothing. */
  dryRun?: boolean;
  /** `jobs clean --older-than 7d` (or an ISO date): the cut-off, as milliseconds before now or an instant. */
  olderThan?: { ms: number } | { at: Date };
}

/** The filter and confirmation options of the bulk job actions (`jobs cancel|retry|rm|run-now`). */
const BULK_OPTIONS = ['status', 'name', 'queue', 'dry-run', 'yes'] as const;

/** The commands that act on one job or, with several ids or filter options, on many. */
export const BULK_COMMANDS = new Set<string>(['jobs cancel', 'jobs retry', 'jobs rm', 'jobs remove', 'jobs run-now']);

/** What each command takes: whether an argument (and what it is) and which options. */
const COMMANDS = {
  stats: { target: undefined, options: [] },
  'jobs ls': { target: undefined, options: ['status', 'name', 'queue', 'limit', 'cursor'] },
  'jobs show': { target: 'job id', options: [] },
  'jobs cancel': { target: 'job ids', options: ['reason', 'children', ...BULK_OPTIONS] },
  'jobs retry': { target: 'job ids', options: BULK_OPTIONS },
  'jobs rm': { target: 'job ids', options: BULK_OPTIONS },
  'jobs remove': { target: 'job ids', options: BULK_OPTIONS },
  'jobs run-now': { target: 'job ids', options: BULK_OPTIONS },
  'jobs clean': { target: undefined, options: ['older-than', 'status', 'name', 'queue', 'dry-run', 'yes'] },
  'jobs logs': { target: 'job id', options: [] },
  'jobs export': { target: 'job id', options: [] },
  'jobs fork': { target: 'job id', options: ['from-step', 'payload'] },
  'dlq ls': { target: undefined, options: ['name', 'queue', 'limit'] },
  'dlq retry': { target: 'optional job id', options: ['all', 'name', 'queue'] },
  'dlq purge': { target: undefined, options: ['name', 'queue', 'yes'] },
  'queues ls': { target: undefined, options: [] },
  'queues pause': { target: 'queue', options: [] },
  'queues resume': { target: 'queue', options: [] },
  'schedules ls': { target: undefined, options: [] },
  'schedules pause': { target: 'schedule', options: [] },
  'schedules resume': { target: 'schedule', options: [] },
  'schedules trigger': { target: 'schedule', options: [] },
  'batches show': { target: 'batch id', options: [] },
  'tokens complete': { target: 'token id', options: [] },
  'tokens reject': { target: 'token id', options: ['reason'] },
  'workers ls': { target: undefined, options: [] },
} as const satisfies Record<string, { target: string | undefined; options: readonly (keyof CommandOptions | 'from-step' | 'dry-run' | 'older-than')[] }>;

export type CommandName = keyof typeof COMMANDS;

const GROUPS = new Set(['jobs', 'dlq', 'queues', 'schedules', 'batches', 'tokens', 'workers']);

/**
 * `loom tokens complete ID --json VALUE`: `--json` is also the global "print JSON" flag, so for this
 * one command it takes the token's output when a value follows it (anything not starting with `-`);
 * a `--json` with no value after it keeps its global meaning. Returns the argv without that pair.
 */
function takeTokenOutput(argv: readonly string[]): { argv: string[]; output?: unknown } {
  const words = argv.filter((a) => !a.startsWith('-'));
  if (words[0] !== 'tokens' || words[1] !== 'complete') return { argv: [...argv] };
  const at = argv.findIndex((a, i) => a === '--json' && argv[i + 1] !== undefined && !argv[i + 1]!.startsWith('-') && i > argv.indexOf('complete'));
  if (at === -1) return { argv: [...argv] };
  const text = argv[at + 1]!;
  let output: unknown;
  try {
    output = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--json '${text}' is not JSON: ${(err as Error).message}`);
  }
  return { argv: [...argv.slice(0, at), ...argv.slice(at + 2)], output };
}

/** Job ids of a MongoStore: 24 hex digits (anything else cannot be a job, so it is a usage error). */
const JOB_ID = /^[0-9a-f]{24}$/i;

/** `--help` asked: print the usage, exit 0. */
export const HELP = Symbol('help');

function nonEmpty(value: string | undefined, option: string): string | undefined {
  if (value === undefined) return undefined;
  if (value.trim() === '') throw new UsageError(`--${option} needs a value`);
  return value;
}

function parseLimit(value: string | undefined, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1 || n > max) throw new UsageError(`--limit must be an integer from 1 to ${max}, got '${value}'`);
  return n;
}

function parseStatuses(values: string[] | undefined): JobStatus[] | undefined {
  if (values === undefined) return undefined;
  const statuses = values.flatMap((v) => v.split(',')).map((s) => s.trim());
  for (const status of statuses) {
    if (!JOB_STATUSES.includes(status as JobStatus)) throw new UsageError(`--status '${status}' is not a status (${JOB_STATUSES.join(', ')})`);
  }
  return statuses as JobStatus[];
}

/**
 * Parses and checks a command line completely before anything connects: an unknown command or
 * option, a missing or malformed id, a bad limit, status or cursor, `purge` without `--yes`, all
 * throw a {@link UsageError}.
 */
export function parseInvocation(rawArgv: readonly string[]): Invocation | typeof HELP {
  const { argv, output } = takeTokenOutput(rawArgv);
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        uri: { type: 'string' },
        database: { type: 'string' },
        prefix: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        status: { type: 'string', multiple: true },
        name: { type: 'string' },
        queue: { type: 'string' },
        limit: { type: 'string' },
        cursor: { type: 'string' },
        reason: { type: 'string' },
        all: { type: 'boolean' },
        yes: { type: 'boolean' },
        'from-step': { type: 'string' },
        payload: { type: 'string' },
        children: { type: 'boolean' },
        'dry-run': { type: 'boolean' },
        'older-than': { type: 'string' },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message.replace(/\. To specify a positional argument.*$/s, ''));
  }
  const { values, positionals } = parsed;
  if (values.help) return HELP;
  const [group, action, ...rest] = positionals;
  if (group === undefined) throw new UsageError('no command given');
  const name = (group === 'stats' ? 'stats' : `${group} ${action ?? ''}`.trim()) as CommandName;
  if (!(name in COMMANDS)) {
    if (GROUPS.has(group)) throw new UsageError(action === undefined ? `'${group}' needs a subcommand` : `unknown command '${group} ${action}'`);
    throw new UsageError(`unknown command '${group}'`);
  }
  const spec = COMMANDS[name];
  const args = group === 'stats' ? [action, ...rest].filter((a) => a !== undefined) : rest;
  const target = args[0];
  const many = spec.target === 'job ids';
  if (args.length > 1 && !many) throw new UsageError(`'${name}' takes at most one argument, got ${args.length}`);
  if (many && args.length > MAX_BULK_IDS)
    throw new UsageError(`'${name}' takes at most ${MAX_BULK_IDS} job ids, got ${args.length} (use a filter: --status, --name, --queue)`);
  if (many) for (const id of args) if (!JOB_ID.test(id)) throw new UsageError(`'${id}' is not a job id (24 hexadecimal digits)`);
  if (spec.target === undefined && target !== undefined) throw new UsageError(`'${name}' takes no argument, got '${target}'`);
  if (spec.target !== undefined && spec.target !== 'optional job id' && !many && target === undefined) throw new UsageError(`'${name}' needs a ${spec.target}`);
  if (spec.target === 'batch id' && target !== undefined && !JOB_ID.test(target)) throw new UsageError(`'${target}' is not a batch id (24 hexadecimal digits)`);
  if ((spec.target === 'job id' || spec.target === 'optional job id') && target !== undefined && !JOB_ID.test(target)) {
    throw new UsageError(`'${target}' is not a job id (24 hexadecimal digits)`);
  }
  if (target !== undefined && target.trim() === '') throw new UsageError(`'${name}' needs a non-empty ${spec.target}`);

  const allowed = new Set<string>(spec.options);
  for (const option of [
    'status',
    'name',
    'queue',
    'limit',
    'cursor',
    'reason',
    'all',
    'yes',
    'from-step',
    'payload',
    'children',
    'dry-run',
    'older-than',
  ] as const) {
    if (values[option] !== undefined && !allowed.has(option)) throw new UsageError(`'${name}' does not take --${option}`);
  }
  const options: CommandOptions = {};
  const status = parseStatuses(values.status);
  if (status) options.status = status;
  for (const option of ['name', 'queue', 'reason'] as const) {
    const value = nonEmpty(values[option], option);
    if (value !== undefined) options[option] = value;
  }
  const limit = parseLimit(values.limit, name === 'jobs ls' ? MAX_JOB_PAGE : 10_000);
  if (limit !== undefined) options.limit = limit;
  if (values.cursor !== undefined) {
    try {
      decodeCursor(values.cursor);
    } catch {
      throw new UsageError(`--cursor '${values.cursor}' is not a cursor printed by 'loom jobs ls'`);
    }
    options.cursor = values.cursor;
  }
  if (output !== undefined) options.output = output;
  const fromStep = nonEmpty(values['from-step'], 'from-step');
  if (fromStep !== undefined) options.fromStep = fromStep;
  if (name === 'jobs fork' && fromStep === undefined) throw new UsageError("'jobs fork' needs --from-step STEP (the first step to run again)");
  if (values.payload !== undefined) {
    try {
      options.payload = JSON.parse(values.payload);
    } catch (err) {
      throw new UsageError(`--payload '${values.payload}' is not JSON: ${(err as Error).message}`);
    }
  }
  if (values.all) options.all = true;
  if (values.yes) options.yes = true;
  if (values.children) options.children = true;
  if (values['dry-run']) options.dryRun = true;

  if (many) {
    const filtered = options.status !== undefined || options.name !== undefined || options.queue !== undefined;
    if (filtered && args.length > 0) throw new UsageError(`'${name}' takes job ids or filter options (--status, --name, --queue), not both`);
    if (!filtered && args.length === 0) throw new UsageError(`'${name}' needs a job id (or several), or filter options (--status, --name, --queue)`);
  }
  if (name === 'jobs clean') {
    const value = nonEmpty(values['older-than'], 'older-than');
    if (value === undefined) throw new UsageError("'jobs clean' needs --older-than AGE (e.g. 7d, 12h) or an ISO date");
    options.olderThan = parseOlderThan(value);
    for (const status of options.status ?? []) {
      if (!['completed', 'dead', 'cancelled'].includes(status))
        throw new UsageError(`'jobs clean' removes finished jobs: --status '${status}' is not completed, dead or cancelled`);
    }
  }

  if (name === 'dlq retry') {
    if (target !== undefined && options.all) throw new UsageError("'dlq retry' takes a job id or --all, not both");
    if (target === undefined && !options.all) throw new UsageError("'dlq retry' needs a job id or --all");
    if (target !== undefined && (options.name !== undefined || options.queue !== undefined))
      throw new UsageError("'dlq retry ID' takes no --name or --queue (they filter --all)");
  }
  if (name === 'dlq purge' && !options.yes) throw new UsageError("'dlq purge' deletes dead letters for good: add --yes to confirm");

  const global: GlobalOptions = { json: values.json === true };
  for (const option of ['uri', 'database', 'prefix'] as const) {
    const value = values[option];
    if (value !== undefined) {
      if (option !== 'prefix' && value.trim() === '') throw new UsageError(`--${option} needs a value`);
      global[option] = value;
    }
  }
  const invocation: Invocation = target === undefined ? { name, options, global } : { name, target, options, global };
  if (many && args.length > 0) invocation.targets = args;
  return invocation;
}

/** `--older-than`: an age (`7d`, `12h`, `30m`) or an ISO date. */
function parseOlderThan(value: string): { ms: number } | { at: Date } {
  if (/^\d/.test(value) && /[smhd]$/.test(value.trim())) {
    try {
      return { ms: toMs(value) };
    } catch {
      // not an age: try a date
    }
  }
  const at = new Date(value);
  if (/^\d{4}-\d{2}-\d{2}/.test(value) && !Number.isNaN(at.getTime())) return { at };
  throw new UsageError(`--older-than '${value}' is neither an age (7d, 12h, 30m) nor an ISO date (2026-12-01)`);
}
