/** Tables for people, JSON for scripts. */

/** What a command writes: stdout for results, stderr for progress and messages about the run. */
export interface Output {
  out(text: string): void;
  err(text: string): void;
  /** Whether stderr is a terminal (progress lines then rewrite themselves). */
  readonly interactive: boolean;
  readonly json: boolean;
  /** The instant relative times are measured from. */
  readonly now: Date;
}

/** Longest cell a table prints; longer values are cut with an ellipsis (`--json` gives them whole). */
export const MAX_CELL = 48;

function cell(value: unknown): string {
  if (value === undefined || value === null) return '-';
  const text = String(value).replace(/\s+/g, ' '); // eslint-disable-line @typescript-eslint/no-base-to-string -- cells are numbers, text and dates; anything else prints as JavaScript prints it
  return text.length > MAX_CELL ? `${text.slice(0, MAX_CELL - 1)}…` : text;
}

/** Aligned columns under a header; numbers are right-aligned. */
export function table(headers: string[], rows: unknown[][]): string {
  const cells = rows.map((row) => row.map(cell));
  const numeric = headers.map((_, i) => rows.length > 0 && rows.every((row) => typeof row[i] === 'number'));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => (numeric[i] ? v.padStart(widths[i]!) : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...cells.map(line)].join('\n') + '\n';
}

const UNITS: [number, string][] = [
  [86_400_000, 'd'],
  [3_600_000, 'h'],
  [60_000, 'm'],
  [1_000, 's'],
];

/** "5m ago", "in 2h", "just now"; dates further than 30 days away as their day. */
export function relative(date: Date | null | undefined, now: Date): string {
  if (!date) return '-';
  const delta = date.getTime() - now.getTime();
  const abs = Math.abs(delta);
  if (abs >= 30 * 86_400_000) return date.toISOString().slice(0, 10);
  if (abs < 1_000) return 'just now';
  const [unit, suffix] = UNITS.find(([ms]) => abs >= ms)!;
  const amount = `${Math.floor(abs / unit)}${suffix}`;
  return delta < 0 ? `${amount} ago` : `in ${amount}`;
}

/** Prints `value` as JSON (dates as ISO strings). */
export function printJson(output: Output, value: unknown): void {
  output.out(`${JSON.stringify(value, null, 2)}\n`);
}
