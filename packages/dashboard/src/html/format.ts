import { html, type Html } from './html.js';

const pad = (n: number) => String(n).padStart(2, '0');

/** `2026-03-10 12:00:05` (UTC). */
export function utc(date: Date): string {
  return `${date.getUTCFullYear()}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())} ${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}`;
}

/** A human duration: `850 ms`, `12.3 s`, `4 min 5 s`, `2 h 3 min`, `3 d 4 h`. */
export function duration(ms: number): string {
  const abs = Math.abs(ms);
  const sign = ms < 0 ? '-' : '';
  if (abs < 1000) return `${sign}${Math.round(abs)} ms`;
  if (abs < 60_000) return `${sign}${(abs / 1000).toFixed(abs < 10_000 ? 2 : 1)} s`;
  const s = Math.floor(abs / 1000);
  if (s < 3600) return `${sign}${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86_400) return `${sign}${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${sign}${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`;
}

/**
 * A time with how long ago (or how far ahead) it is: `<time datetime="ISO" data-when>`, the
 * exact instant in `datetime` and (as UTC) in `title`. The page script re-renders every
 * `time[data-when]` in UTC or in the browser's local time when the header's toggle says so; without
 * script the relative text stays, the instant in its tooltip.
 */
export function when(date: Date | null | undefined, now: Date): Html {
  if (!date) return html`<span class="muted">—</span>`;
  const delta = now.getTime() - date.getTime();
  const relative = Math.abs(delta) < 1000 ? 'now' : delta > 0 ? `${duration(delta)} ago` : `in ${duration(-delta)}`;
  return html`<time datetime="${date.toISOString()}" title="${utc(date)} UTC" data-when>${relative}</time>`;
}

/**
 * A date and time in UTC (`2026-03-10 12:00:05 UTC`) as `<time data-when="date">`: the page
 * script shows it in the browser's local time when the toggle says "local".
 */
export function instant(date: Date): Html {
  return html`<time datetime="${date.toISOString()}" data-when="date">${utc(date)} UTC</time>`;
}

/** A size in bytes for people: `980 B`, `256 KiB`, `1.5 MiB`. */
export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(n < 10 * 1024 ? 1 : 0)} KiB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MiB`;
}

/** The largest value shown in full on a job page; larger ones are cut with a note. */
export const MAX_SHOWN_CHARS = 64 * 1024;

/** A stored value as indented JSON (dates as ISO strings), cut at {@link MAX_SHOWN_CHARS}. */
export function json(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2) ?? String(value);
  } catch (err) {
    text = `(cannot be shown: ${(err as Error).message})`;
  }
  if (text.length <= MAX_SHOWN_CHARS) return text;
  return `${text.slice(0, MAX_SHOWN_CHARS)}\n… (${text.length - MAX_SHOWN_CHARS} more characters not shown)`;
}

/** Cuts a one-line text for a table cell. */
export function short(text: string, max = 120): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}

/** `1,234,567`. */
export function count(n: number): string {
  return n.toLocaleString('en-US');
}
