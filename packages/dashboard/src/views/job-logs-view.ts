import type { JobLogLine, JobRecord } from '@loom/core';
import { html, type Html } from '../html/html.js';
import { utc } from '../html/format.js';
import { panel } from './components.js';

/** `12:00:05.250`: a line's time (UTC) to the millisecond; the full date is its title. */
function clockTime(at: Date): string {
  return `${utc(at).slice(11)}.${String(at.getUTCMilliseconds()).padStart(3, '0')}`;
}

function fieldsText(fields: JobLogLine['fields']): string {
  if (fields === undefined || Object.keys(fields).length === 0) return '';
  try {
    return JSON.stringify(fields);
  } catch {
    return '(fields cannot be shown)';
  }
}

function logLine(line: JobLogLine): Html {
  const fields = fieldsText(line.fields);
  return html`<li class="log-line log-${line.level}" data-level="${line.level}"><time datetime="${line.at.toISOString()}" title="${utc(line.at)} UTC" data-when="clock">${clockTime(line.at)}</time><span class="log-level">${line.level}</span><span class="log-attempt" title="attempt ${String(line.attempt)}">#${String(line.attempt)}</span><span class="log-msg">${line.msg}${fields ? html` <code class="log-fields">${fields}</code>` : ''}</span></li>`;
}

/**
 * The job's kept `ctx.log` lines (`JobRecord.logs`), oldest first, as text (escaped: messages and
 * fields come from handlers), each with its time, level (coloured), attempt and fields.
 */
export function jobLogsPanel(job: JobRecord): Html {
  const lines = job.logs ?? [];
  const body = lines.length
    ? html`<ol class="log-lines" tabindex="0" aria-label="Log lines, oldest first" data-test="log-lines">${lines.map(logLine)}</ol>`
    : html`<p class="empty" data-test="no-logs">No log lines were kept: the handler wrote nothing to ctx.log${job.status === 'queued' || job.status === 'waiting' ? ' (or has not run yet)' : ''}.</p>`;
  return panel('job-logs', `Logs (${lines.length})`, body, {
    extra: html`<span class="muted log-note">the last lines kept, oldest first</span>`,
  });
}
