import { LoomError, type Jobs, type Tokens } from '@loom/core';
import { PageError } from './errors.js';
import type { Flash } from './http/flash.js';
import { href, jobPath } from './views/page-context.js';

/** What an action answers: a one-time message and where to go. */
export interface ActionOutcome {
  flash: Flash;
  to: string;
}

/**
 * The workflow actions of a job page: Approve / Reject of a wait token (`loom.tokens.complete` /
 * `reject`) and Fork from a step (`loom.jobs.fork`). Called by the dashboard's action handler after
 * its Origin, CSRF and `authorize` checks; undefined for any other path.
 */
export async function workflowAction(
  deps: { jobs: Jobs; tokens: Tokens; base: string },
  path: string,
  form: Map<string, string>,
  decode: (segment: string) => string,
): Promise<ActionOutcome | undefined> {
  const ctx = { base: deps.base };
  const token = /^\/actions\/tokens\/([^/]+)\/(complete|reject)$/.exec(path);
  if (token) {
    const id = decode(token[1]!);
    const stored = await deps.tokens.get(id);
    if (!stored) throw new PageError(404, 'Not found', `No wait token has the id ${id}.`);
    const page = href(ctx, jobPath(stored.jobId));
    const say = (kind: Flash['kind'], text: string) => ({ flash: { kind, text }, to: page });
    try {
      if (token[2] === 'complete') {
        const output = parseJson(form.get('output'), 'The output');
        if ('problem' in output) return say('error', output.problem);
        const r = await deps.tokens.complete(id, output.value);
        return say(r.completed ? 'ok' : 'error', r.completed ? `Token ${id} approved: the job resumes.` : notSettled(id, r.status, r.reason));
      }
      const reason = form.get('reason')?.trim();
      const r = await deps.tokens.reject(id, reason === '' ? undefined : reason);
      return say(r.completed ? 'ok' : 'error', r.completed ? `Token ${id} rejected: the job resumes with the rejection.` : notSettled(id, r.status, r.reason));
    } catch (err) {
      if (LoomError.is(err, 'INVALID_TOKEN_OUTPUT')) return say('error', err.message);
      throw err;
    }
  }
  const fork = /^\/actions\/jobs\/([^/]+)\/fork$/.exec(path);
  if (fork) {
    const id = decode(fork[1]!);
    const page = href(ctx, jobPath(id));
    const fromStep = form.get('fromStep') ?? '';
    const payload = parseJson(form.get('payload'), 'The payload');
    if ('problem' in payload) return { flash: { kind: 'error', text: payload.problem }, to: page };
    try {
      const r = await deps.jobs.fork(id, payload.value === undefined ? { fromStep } : { fromStep, payload: payload.value });
      const kept = r.keptSteps.length === 0 ? 'no step kept' : `kept ${r.keptSteps.length} step${r.keptSteps.length === 1 ? '' : 's'}`;
      return { flash: { kind: 'ok', text: `Forked job ${id} from step "${fromStep}" (${kept}): this is the new job ${r.id}.` }, to: href(ctx, jobPath(r.id)) };
    } catch (err) {
      if (LoomError.is(err, 'INVALID_ARGUMENT') || LoomError.is(err, 'NOT_PLAIN_DATA')) return { flash: { kind: 'error', text: err.message }, to: page };
      throw err;
    }
  }
  return undefined;
}

/**
 * The value of a form's JSON box (`undefined` when it is empty), or what is wrong with its text: a
 * text that is not JSON is told to the user, never guessed at.
 */
function parseJson(text: string | undefined, what: string): { value: unknown } | { problem: string } {
  const raw = text?.trim() ?? '';
  if (raw === '') return { value: undefined };
  try {
    return { value: JSON.parse(raw) as unknown };
  } catch (err) {
    return { problem: `${what} is not JSON (${(err as Error).message}); nothing changed. Type {} for an empty object.` };
  }
}

function notSettled(id: string, status: string, reason: string | undefined): string {
  if (status === 'cancelled') return `Token ${id} is cancelled (${reason ?? 'its job ended'}): nothing resumes, nothing changed.`;
  return `Token ${id} was already ${status}: nothing changed.`;
}
