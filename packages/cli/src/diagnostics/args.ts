import { parseArgs } from 'node:util';
import { UsageError } from '../errors.js';

/** The commands that check a deployment rather than steer a store: they take their own options. */
export type DiagnosticName = 'doctor' | 'selftest';

/** A parsed `loom doctor` or `loom selftest` line. */
export interface DiagnosticInvocation {
  name: DiagnosticName;
  uri?: string;
  database?: string;
  prefix: string;
  json: boolean;
  /** selftest: use a database that holds collections (only the ones selftest created are dropped). */
  force: boolean;
  /** selftest: length of the chaos run in milliseconds. */
  durationMs: number;
}

/** Default length of selftest's chaos run. */
export const DEFAULT_CHAOS_MS = 60_000;

/** Options of the other commands that take a value: their value is never the command word. */
const VALUE_OPTIONS = new Set(['--uri', '--database', '--prefix', '--status', '--name', '--queue', '--limit', '--cursor', '--reason', '--duration']);

/** `doctor` or `selftest` when that is the command word of `argv`, else undefined (another command). */
export function diagnosticName(argv: readonly string[]): DiagnosticName | undefined {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (VALUE_OPTIONS.has(arg)) {
      i++;
      continue;
    }
    if (arg.startsWith('-')) continue;
    return arg === 'doctor' || arg === 'selftest' ? arg : undefined;
  }
  return undefined;
}

/** '90s', '5m', '1500ms' or a number of seconds. */
function parseDuration(value: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(value.trim());
  if (!match) throw new UsageError(`--duration must be a duration like '60s', '2m' or '1500ms', got '${value}'`);
  const ms = Number(match[1]) * (match[2] === 'ms' ? 1 : match[2] === 'm' ? 60_000 : 1_000);
  if (ms < 1_000 || ms > 24 * 3_600_000) throw new UsageError(`--duration must be from 1s to 24h, got '${value}'`);
  return Math.round(ms);
}

/** Parses a `doctor` or `selftest` line completely before anything connects; a bad one throws a {@link UsageError}. */
export function parseDiagnostic(name: DiagnosticName, argv: readonly string[]): DiagnosticInvocation {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        uri: { type: 'string' },
        database: { type: 'string' },
        prefix: { type: 'string' },
        json: { type: 'boolean' },
        force: { type: 'boolean' },
        duration: { type: 'string' },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message.replace(/\. To specify a positional argument.*$/s, ''));
  }
  const { values, positionals } = parsed;
  if (positionals.length > 1) throw new UsageError(`'${name}' takes no argument, got '${positionals[1]}'`);
  if (name === 'doctor') {
    if (values.force) throw new UsageError("'doctor' does not take --force");
    if (values.duration !== undefined) throw new UsageError("'doctor' does not take --duration");
  }
  for (const option of ['uri', 'database'] as const) {
    if (values[option] !== undefined && values[option].trim() === '') throw new UsageError(`--${option} needs a value`);
  }
  const invocation: DiagnosticInvocation = {
    name,
    prefix: values.prefix ?? 'loom_',
    json: values.json === true,
    force: values.force === true,
    durationMs: values.duration === undefined ? DEFAULT_CHAOS_MS : parseDuration(values.duration),
  };
  if (values.uri !== undefined) invocation.uri = values.uri;
  if (values.database !== undefined) invocation.database = values.database;
  return invocation;
}
