import type { IncomingMessage } from 'node:http';
import { BodyTooLargeError } from '../errors.js';

/** Forms the dashboard posts are a few short fields, or the ids of a page's selected jobs (up to 500). */
const MAX_FORM_BYTES = 64 * 1024;

/** Fields a form may give several times (the selected jobs' ids, the statuses of a filter): their values joined by newlines. */
export const MULTI_FIELDS: ReadonlySet<string> = new Set(['id', 'status']);

/** The values of a field given several times (see {@link MULTI_FIELDS}). */
export function formValues(fields: Map<string, string>, key: string): string[] {
  return (fields.get(key) ?? '').split('\n').filter((v) => v !== '');
}

/**
 * The fields of a posted form, as strings (a field given twice keeps its first value, but for
 * {@link MULTI_FIELDS}). When the
 * host framework parsed the body already (Express and NestJS with `urlencoded()`), that result is
 * used, keeping only string values: an object a query-string parser made from `a[b]=c` is dropped,
 * never passed on.
 */
export async function readForm(req: IncomingMessage & { body?: unknown; _body?: boolean }): Promise<Map<string, string>> {
  const fields = new Map<string, string>();
  if (req.readableEnded || req._body === true) {
    if (typeof req.body === 'object' && req.body !== null) {
      for (const [key, value] of Object.entries(req.body)) {
        if (typeof value === 'string') fields.set(key, value);
        else if (MULTI_FIELDS.has(key) && Array.isArray(value)) fields.set(key, value.filter((v): v is string => typeof v === 'string').join('\n'));
      }
    }
    return fields;
  }
  for (const [key, value] of new URLSearchParams(await readBody(req, MAX_FORM_BYTES, 'form'))) {
    const before = fields.get(key);
    if (before === undefined) fields.set(key, value);
    else if (MULTI_FIELDS.has(key)) fields.set(key, `${before}\n${value}`);
  }
  return fields;
}

/** The request body as UTF-8 text, refused (`BodyTooLargeError`) past `maxBytes`. */
export async function readBody(req: IncomingMessage, maxBytes: number, what: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw new BodyTooLargeError(`The ${what} is over ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
