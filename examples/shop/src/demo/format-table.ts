/** A plain box-drawn table; numbers align right. */
export function formatTable(header: readonly string[], rows: ReadonlyArray<ReadonlyArray<string | number>>): string {
  const cells = [header, ...rows].map((row) => row.map(String));
  const widths = header.map((_, c) => Math.max(...cells.map((row) => (row[c] ?? '').length)));
  const line = (l: string, m: string, r: string): string => `${l}${widths.map((w) => '─'.repeat(w + 2)).join(m)}${r}`;
  const row = (values: readonly string[], raw: ReadonlyArray<string | number>): string =>
    `│${values.map((v, c) => ` ${typeof raw[c] === 'number' ? v.padStart(widths[c]!) : v.padEnd(widths[c]!)} `).join('│')}│`;
  return [line('┌', '┬', '┐'), row(cells[0]!, header), line('├', '┼', '┤'), ...rows.map((r, i) => row(cells[i + 1]!, r)), line('└', '┴', '┘')].join('\n');
}
