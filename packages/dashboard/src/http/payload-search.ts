import type { PayloadValue } from '@loom/core';

/**
 * The payload box of the jobs page: `orderId=o1 customer.tier="gold plan" count=5`. Each pair is a
 * field path, `=`, and a value: a JSON number, `true`, `false`, `null` or a quoted string is that
 * value; anything else is the string as typed. Paths and values are checked by `jobs.list`.
 */
export function parsePayloadSearch(text: string): Record<string, PayloadValue> | string {
  const out: Record<string, PayloadValue> = Object.create(null) as Record<string, PayloadValue>;
  const pair = /\s*([^\s=]+)=("(?:[^"\\]|\\.)*"|[^\s"]*)\s*/y;
  let at = 0;
  while (at < text.length) {
    pair.lastIndex = at;
    const m = pair.exec(text);
    if (!m) return `"${text.slice(at).trim()}" is not field=value (quote values with spaces: tier="gold plan")`;
    out[m[1]!] = valueOf(m[2]!);
    at = pair.lastIndex;
  }
  return out;
}

function valueOf(raw: string): PayloadValue {
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  if (raw === 'null') return null;
  if (/^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(raw)) return Number(raw);
  if (raw.startsWith('"')) return JSON.parse(raw) as string;
  return raw;
}
