/**
 * HTML built from tagged templates that escape every interpolated value. This is the one place
 * the dashboard turns data into markup: a job's payload, error, step name or progress can hold
 * `<script>` and must show as text, so nothing reaches the page unescaped unless it is an
 * {@link Html} value made by this module (a template, or a fixed fragment through {@link trusted}).
 */
export class Html {
  /** @internal Use {@link html} or {@link trusted}. */
  constructor(readonly markup: string) {}

  toString(): string {
    return this.markup;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

/** Text → HTML text or attribute value (templates quote attributes with `"`). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (c) => ESCAPES[c]!);
}

/** A value inside a template: Html as it is, arrays item by item, nothing for null/undefined/false, text escaped. */
function render(value: unknown): string {
  if (value instanceof Html) return value.markup;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value)); // eslint-disable-line @typescript-eslint/no-base-to-string -- templates show numbers and text; any other value prints as JavaScript prints it
}

/**
 * ```ts
 * html`<td>${job.name}</td>`   // job.name is escaped
 * ```
 */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1]!;
  return new Html(out);
}

/** Markup written in this package (never data): passed through as it is. */
export function trusted(markup: string): Html {
  return new Html(markup);
}

/** Joins fragments with a separator (the separator is escaped like any text). */
export function join(parts: readonly unknown[], separator: unknown = ''): Html {
  return new Html(parts.map(render).join(render(separator)));
}
