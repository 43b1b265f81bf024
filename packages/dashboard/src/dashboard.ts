import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  ConsoleLogger,
  DeadLetters,
  JOB_STATUSES,
  Jobs,
  LoomError,
  MAX_JOB_PAGE,
  Queues,
  StoredSchedules,
  SystemClock,
  Tokens,
  Workers,
  type JobListFilter,
  type JobRecord,
  type JobStatus,
  type JobSummary,
  type Logger,
} from '@loom/core';
import { loadAssets } from './assets.js';
import { performBulk } from './bulk-actions.js';
import { bulkConfirmPage, type FilterFields } from './views/bulk-view.js';
import { finishedSeries } from './finished-series.js';
import { Html } from './html/html.js';
import { Csrf } from './http/csrf.js';
import { FlashCookie, type Flash } from './http/flash.js';
import { BodyTooLargeError, PageError } from './errors.js';
import { readForm } from './http/form-body.js';
import { locate, type Located } from './http/mount.js';
import { parsePayloadSearch } from './http/payload-search.js';
import { setSecurityHeaders } from './http/security-headers.js';
import { jobFingerprint, queuesFingerprint, schedulesFingerprint, workersFingerprint, type LiveTopic } from './live/fingerprints.js';
import { LiveFeed } from './live/live-feed.js';
import { checkOptions, normalizeBasePath, type DashboardOptions } from './options.js';
import { CHILDREN_SHOWN, jobPage } from './views/job-view.js';
import { flowPage } from './views/flow-view.js';
import { FlowReads } from './flow-reads.js';
import { batchPage } from './views/batch-view.js';
import { jobsPage, type JobsFilter } from './views/jobs-view.js';
import { messagePage } from './views/message-view.js';
import { href, jobPath, type PageContext } from './views/page-context.js';
import { purgePage } from './views/purge-view.js';
import { queuesPage } from './views/queues-view.js';
import { queuePage } from './views/queue-view.js';
import { CHART_RANGES, queueCharts, type ChartRange } from './queue-charts.js';
import { schedulesPage } from './views/schedules-view.js';
import { forkPanel } from './views/fork-view.js';
import { waitTokensPanel } from './views/wait-tokens-view.js';
import { workflowAction } from './workflow-actions.js';
import { workersPage } from './views/workers-view.js';

/** The overview's chart: the last hour in 5-minute buckets. */
const CHART_BUCKET_MS = 5 * 60_000;
const CHART_BUCKETS = 12;
/** A purge confirmation counts up to this many letters, then says "N+". */
const PURGE_COUNT_LIMIT = 1000;
/** Longest name or queue filter accepted. */
const MAX_FILTER_CHARS = 300;
/** A download is written in slices of this many bytes, each after the socket took the last. */
const DOWNLOAD_SLICE = 256 * 1024;
/** Sent by the page script's live-update fetch (assets/dashboard.js); Node lower-cases header names. */
const LIVE_UPDATE_HEADER = 'x-loom-live-update';

/**
 * The dashboard: a `(req, res, next?)` request handler. Mount it anywhere a Node request handler
 * goes; call {@link LoomDashboard.close} when the server stops (it ends the live-update streams).
 */
export interface LoomDashboard {
  (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void): void;
  /** Ends every open live-update stream and stops polling. */
  close(): void;
  /** Polls the store for live updates now, without waiting for the next tick. */
  refresh(): Promise<void>;
}

/**
 * Builds the dashboard over a store.
 *
 * ```ts
 * import { loomDashboard } from '@loom/dashboard';
 * const dashboard = loomDashboard({ store, basePath: '/loom', authorize: (req) => isAdmin(req) });
 * http.createServer(dashboard);     // node:http
 * app.use('/loom', dashboard);      // Express, NestJS, Fastify (with @fastify/middie)
 * ```
 */
export function loomDashboard(options: DashboardOptions): LoomDashboard {
  const { refreshMs, pageSize } = checkOptions(options);
  const basePath = options.basePath === undefined ? undefined : normalizeBasePath(options.basePath);
  const clock = options.clock ?? new SystemClock();
  const logger: Logger = options.logger ?? new ConsoleLogger();
  const { store } = options;
  // Core's operations over a bare store, as the `loom` command line builds them: the same checks,
  // cursors and side effects as `loom.jobs` and friends (a cancelled child wakes its waiting
  // parent). No engine runs here to hear of a retry: the engines sharing the store claim the job
  // at their next poll.
  const jobs = new Jobs({ store, clock, logger });
  const queues = new Queues({ store, clock });
  const deadLetters = new DeadLetters({ store, clock, logger, onReplayed: () => {} });
  const schedules = new StoredSchedules({ store, clock });
  const tokens = new Tokens({ store, clock });
  const workers = new Workers({ store, clock });
  const flows = new FlowReads({ store, jobs });
  const assets = loadAssets();
  const secret = options.secret !== undefined ? Buffer.from(options.secret) : randomBytes(32);
  const title = options.title ?? 'Loom';

  const readFingerprint = async (topic: LiveTopic): Promise<string> => {
    if (topic.kind === 'queues') return queuesFingerprint(await queues.list());
    if (topic.kind === 'schedules') return schedulesFingerprint(await schedules.list());
    if (topic.kind === 'workers') return workersFingerprint(await workers.list());
    // The job's state only: a payload the store keeps outside the record is not read every poll.
    return jobFingerprint(await store.getJob(topic.id, { values: false }));
  };
  const feed = new LiveFeed({ read: readFingerprint, intervalMs: refreshMs, logger });

  async function mayAct(req: IncomingMessage): Promise<boolean> {
    if (!options.authorize) return false;
    try {
      return (await options.authorize(req)) === true;
    } catch (err) {
      logger.error({ err }, 'dashboard: authorize(req) threw; the request may not act');
      return false;
    }
  }

  async function context(req: IncomingMessage, res: ServerResponse, at: Located): Promise<PageContext> {
    const csrf = new Csrf(secret, at.base || '/');
    const ctx: PageContext = {
      base: at.base,
      csrf: csrf.tokenFor(req, res),
      canAct: await mayAct(req),
      now: clock.now(),
      title,
      assetVersion: assets.version,
      here: `${at.path}${at.query.size > 0 ? `?${at.query.toString()}` : ''}`,
    };
    // A live update's fetch (dashboard.js) comes from the page being left while an action's
    // redirect loads: the message is that next page's, so the update leaves it waiting.
    if (req.headers[LIVE_UPDATE_HEADER] === undefined) {
      const flash = new FlashCookie(csrf, at.base || '/').take(req, res);
      if (flash) ctx.flash = flash;
    }
    return ctx;
  }

  function send(res: ServerResponse, status: number, body: Html | string | Buffer, contentType = 'text/html; charset=utf-8', head = false): void {
    const bytes = typeof body === 'string' || body instanceof Html ? Buffer.from(body.toString()) : body;
    res.statusCode = status;
    res.setHeader('Content-Type', contentType);
    res.setHeader('Content-Length', bytes.length);
    if (!res.hasHeader('Cache-Control')) res.setHeader('Cache-Control', 'no-store');
    res.end(head ? undefined : bytes);
  }

  function redirect(res: ServerResponse, location: string): void {
    res.statusCode = 303;
    res.setHeader('Location', location);
    res.setHeader('Cache-Control', 'no-store');
    res.end();
  }

  // ---- reading the query string -------------------------------------------------------------------

  function filterValue(query: URLSearchParams, key: string): string | undefined {
    const value = query.get(key)?.trim();
    if (!value) return undefined;
    if (value.length > MAX_FILTER_CHARS) throw new PageError(400, 'Filter too long', `The ${key} filter is over ${MAX_FILTER_CHARS} characters.`);
    return value;
  }

  function jobsFilter(query: URLSearchParams): JobsFilter {
    const filter: JobsFilter = {};
    const statuses = query.getAll('status').filter((s) => s !== '');
    for (const s of statuses) {
      if (!JOB_STATUSES.includes(s as JobStatus)) throw new PageError(400, 'Unknown status', `"${s}" is not a job status (${JOB_STATUSES.join(', ')}).`);
    }
    if (statuses.length > 0) filter.statuses = [...new Set(statuses as JobStatus[])];
    const name = filterValue(query, 'name');
    const queue = filterValue(query, 'queue');
    if (name !== undefined) filter.name = name;
    if (queue !== undefined) filter.queue = queue;
    const key = filterValue(query, 'key');
    if (key !== undefined) filter.key = key;
    const payload = filterValue(query, 'payload');
    if (payload !== undefined) {
      const parsed = parsePayloadSearch(payload);
      if (typeof parsed === 'string') throw new PageError(400, 'Bad payload search', parsed);
      filter.payload = payload;
      filter.payloadMatch = parsed;
    }
    const cursor = query.get('cursor');
    if (cursor) {
      if (!/^[A-Za-z0-9_-]{1,600}$/.test(cursor))
        throw new PageError(400, 'Bad page link', 'This page link is not one the dashboard made; start again from the first page.');
      filter.cursor = cursor;
    }
    return filter;
  }

  // ---- pages ----------------------------------------------------------------------------------------

  async function renderPage(req: IncomingMessage, res: ServerResponse, at: Located): Promise<void> {
    const ctx = await context(req, res, at);
    const head = req.method === 'HEAD';
    try {
      const body = await pageBody(ctx, at);
      send(res, 200, body, undefined, head);
    } catch (err) {
      if (err instanceof PageError) return send(res, err.status, messagePage(ctx, err.title, err.message), undefined, head);
      if (LoomError.is(err, 'INVALID_ARGUMENT')) return send(res, 400, messagePage(ctx, 'Bad request', err.message), undefined, head);
      logger.error({ err, path: at.path }, `dashboard: ${at.path} failed`);
      send(res, 500, messagePage(ctx, 'Something went wrong', 'The dashboard could not read the store; the server log says why.'), undefined, head);
    }
  }

  async function pageBody(ctx: PageContext, at: Located): Promise<Html> {
    const { path, query } = at;
    if (path === '/') {
      const now = ctx.now.getTime();
      const since = new Date(Math.floor(now / CHART_BUCKET_MS) * CHART_BUCKET_MS - (CHART_BUCKETS - 1) * CHART_BUCKET_MS);
      const [queueList, series] = await Promise.all([queues.list(), finishedSeries(store, since, CHART_BUCKET_MS, CHART_BUCKETS)]);
      return queuesPage(ctx, { queues: queueList, series });
    }
    if (path === '/jobs') {
      const filter = jobsFilter(query);
      const [page, queueList] = await Promise.all([jobs.list({ ...listFilter(filter), limit: pageSize }), queues.list()]);
      return jobsPage(ctx, { filter, page, queues: queueList });
    }
    const jobMatch = /^\/jobs\/([^/]+)$/.exec(path);
    if (jobMatch) {
      const id = decodeSegment(jobMatch[1]!);
      const job = await jobs.get(id);
      if (!job) throw new PageError(404, 'Job not found', `No job with id ${id}: it never existed, or it was removed.`);
      // A read core's operations have no method for (the job page alone lists children).
      const [children, heldBy, waitTokens, relations] = await Promise.all([
        store.listJobs({ parentId: job.id, limit: CHILDREN_SHOWN }),
        heldByOf(job, ctx.now),
        tokens.list(job.id),
        flows.jobRelations(job),
      ]);
      const panels = { above: waitTokensPanel(ctx, job, waitTokens), below: forkPanel(ctx, job) };
      return jobPage(ctx, heldBy ? { job, children, relations, heldBy, ...panels } : { job, children, relations, ...panels });
    }
    const batchMatch = /^\/batches\/([^/]+)$/.exec(path);
    if (batchMatch) {
      const id = decodeSegment(batchMatch[1]!);
      const batch = await flows.batch(id);
      if (!batch) throw new PageError(404, 'Batch not found', `No batch with id ${id}: it never existed, or it was removed.`);
      return batchPage(ctx, batch);
    }
    const queueMatch = /^\/queues\/([^/]+)$/.exec(path);
    if (queueMatch) {
      const name = decodeSegment(queueMatch[1]!);
      const range = query.get('range') ?? '24h';
      if (!Object.prototype.hasOwnProperty.call(CHART_RANGES, range)) throw new PageError(400, 'Unknown range', `The charts cover 24h or 7d, not "${range}".`);
      // queues.list() also samples each queue's depth into the series (the store's listQueues(now)).
      const [queueList, charts] = await Promise.all([queues.list(), queueCharts(store, name, range as ChartRange, ctx.now)]);
      return queuePage(ctx, { name, queue: queueList.find((q) => q.name === name), range: range as ChartRange, charts });
    }
    if (path === '/schedules') return schedulesPage(ctx, { schedules: await schedules.list() });
    if (path === '/flow') return flowPage(ctx, { usage: await queues.flow() });
    if (path === '/workers') return workersPage(ctx, { workers: await workers.list() });
    if (path === '/dead-letters/purge') {
      const name = filterValue(query, 'name');
      const queue = filterValue(query, 'queue');
      const selection = { ...(name ? { name } : {}), ...(queue ? { queue } : {}) };
      return purgePage(ctx, { ...selection, ...(await countDeadLetters(selection)) });
    }
    throw new PageError(404, 'Not found', `The dashboard has no page at ${path}.`);
  }

  /** A bulk action's filter: the jobs page's, from the fields its form carries (no cursor: every page). */
  function bulkFilter(query: URLSearchParams): { fields: FilterFields; list: JobListFilter } {
    const filter = jobsFilter(query);
    const fields: FilterFields = {
      ...(filter.statuses ? { statuses: filter.statuses } : {}),
      ...(filter.name !== undefined ? { name: filter.name } : {}),
      ...(filter.queue !== undefined ? { queue: filter.queue } : {}),
      ...(filter.key !== undefined ? { key: filter.key } : {}),
      ...(filter.payload !== undefined ? { payload: filter.payload } : {}),
    };
    return { fields, list: listFilter(filter) };
  }

  /** The `jobs.list` filter of the jobs page's filter. */
  function listFilter(filter: JobsFilter): JobListFilter {
    const { statuses, name, queue, key, payloadMatch, cursor } = filter;
    return {
      ...(statuses ? { status: statuses } : {}),
      ...(name !== undefined ? { name } : {}),
      ...(queue !== undefined ? { queue } : {}),
      ...(key !== undefined ? { idempotencyKey: key } : {}),
      ...(payloadMatch !== undefined ? { payload: payloadMatch } : {}),
      ...(cursor !== undefined ? { cursor } : {}),
    };
  }

  /** `<base>/jobs?id=…` (the jump box): the job's page when it exists. */
  async function jumpToJob(req: IncomingMessage, res: ServerResponse, at: Located, id: string): Promise<void> {
    if (id.length > MAX_FILTER_CHARS || (await jobs.get(id)) === null) {
      const ctx = await context(req, res, at);
      return send(res, 404, messagePage(ctx, 'Job not found', `No job with id ${id}: it never existed, or it was removed.`), undefined, req.method === 'HEAD');
    }
    redirect(res, href({ base: at.base }, jobPath(id)));
  }

  /**
   * What holds a due queued job back (`heldBy`), which only job pages carry: this job's page of
   * `jobs.list`, narrowed to its name, queue and creation millisecond (one short index range).
   */
  async function heldByOf(job: JobRecord, now: Date): Promise<JobSummary['heldBy']> {
    if (job.status !== 'queued' || job.runAt > now) return undefined;
    const at = job.createdAt.getTime();
    const page = await jobs.list({
      status: 'queued',
      name: job.name,
      queue: job.queue,
      createdAfter: new Date(at - 1),
      createdBefore: new Date(at + 1),
      limit: MAX_JOB_PAGE,
    });
    return page.jobs.find((j) => j.id === job.id)?.heldBy;
  }

  /** How many dead letters match, up to {@link PURGE_COUNT_LIMIT} (`more` when others follow), in pages `jobs.list` allows. */
  async function countDeadLetters(selection: { name?: string; queue?: string }): Promise<{ matching: number; more: boolean }> {
    let matching = 0;
    let cursor: string | undefined;
    do {
      const limit = Math.min(MAX_JOB_PAGE, PURGE_COUNT_LIMIT - matching);
      const page = await jobs.list({ status: 'dead', ...selection, limit, ...(cursor !== undefined ? { cursor } : {}) });
      matching += page.jobs.length;
      cursor = page.next;
    } while (cursor !== undefined && matching < PURGE_COUNT_LIMIT);
    return { matching, more: cursor !== undefined };
  }

  function decodeSegment(segment: string): string {
    try {
      return decodeURIComponent(segment);
    } catch {
      throw new PageError(400, 'Bad link', 'This link is not one the dashboard made.');
    }
  }

  // ---- actions -------------------------------------------------------------------------------------

  /** Runs a POST: read-only and CSRF checks, then the action; answers with a redirect and a flash. */
  async function act(req: IncomingMessage, res: ServerResponse, at: Located): Promise<void> {
    const csrf = new Csrf(secret, at.base || '/');
    const flash = new FlashCookie(csrf, at.base || '/');
    const refuse = async (status: number, title: string, message: string) => send(res, status, messagePage(await context(req, res, at), title, message));
    let form: Map<string, string>;
    try {
      form = await readForm(req);
    } catch (err) {
      if (err instanceof BodyTooLargeError) return refuse(413, 'Form too large', err.message);
      throw err;
    }
    // Defence in depth beside the CSRF token: a browser names the page a POST came from in
    // `Origin`; one from another host is refused. Absent (scripts, older clients) or `null` (what
    // Chromium sends under the pages' no-referrer policy) is left to the token.
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== 'null' && !sameHost(origin, req.headers.host)) {
      return refuse(403, 'Cross-origin request', 'This form was sent from another site; actions are accepted only from the dashboard itself.');
    }
    if (!options.authorize) return refuse(403, 'Read-only', 'This dashboard is read-only: pass authorize(req) to loomDashboard to allow actions.');
    if (!csrf.verify(req, form.get('_csrf'))) {
      return refuse(403, 'Form expired', 'The form was not sent from this dashboard (or the page is too old). Reload the page and try again.');
    }
    if (!(await mayAct(req))) return refuse(403, 'Not allowed', 'You may look at this dashboard but not act on it.');
    let outcome: { flash: Flash; to: string };
    try {
      if (at.path === '/actions/jobs/bulk') {
        const bulk = await performBulk({ jobs, readFilter: (query) => bulkFilter(query) }, form);
        const to = back(at, form, href({ base: at.base }, '/jobs'));
        if (bulk.kind === 'confirm') {
          const page = bulkConfirmPage(await context(req, res, at), { ...bulk, back: to.slice(at.base.length) });
          return send(res, 200, page);
        }
        outcome = { flash: { kind: 'ok', text: bulk.text }, to };
      } else outcome = await perform(at, form);
    } catch (err) {
      if (err instanceof PageError) return refuse(err.status, err.title, err.message);
      if (LoomError.is(err, 'JOB_NOT_FOUND') || LoomError.is(err, 'SCHEDULE_NOT_FOUND')) return refuse(404, 'Not found', err.message);
      if (LoomError.is(err, 'INVALID_ARGUMENT')) return refuse(400, 'Bad request', err.message);
      logger.error({ err, path: at.path }, `dashboard: action ${at.path} failed`);
      return refuse(500, 'Something went wrong', 'The action failed; the server log says why. Nothing may have changed: look before trying again.');
    }
    flash.set(req, res, outcome.flash);
    redirect(res, outcome.to);
    void feed.poll();
  }

  function sameHost(origin: string, host: string | undefined): boolean {
    try {
      return host !== undefined && new URL(origin).host === host;
    } catch {
      return false;
    }
  }

  /** Where to go after an action on a list: the list the form was on (a path inside the dashboard). */
  function back(at: Located, form: Map<string, string>, fallback: string): string {
    const to = form.get('back');
    if (to !== undefined && /^\/(?![/\\])[A-Za-z0-9\-._~/?=&%+]*$/.test(to)) return `${at.base}${to}`;
    return fallback;
  }

  async function perform(at: Located, form: Map<string, string>): Promise<{ flash: Flash; to: string }> {
    const ctx = { base: at.base };
    const ok = (text: string, to: string) => ({ flash: { kind: 'ok' as const, text }, to });
    const workflow = await workflowAction({ jobs, tokens, base: at.base }, at.path, form, decodeSegment);
    if (workflow) return workflow;
    const job = /^\/actions\/jobs\/([^/]+)\/(retry|cancel|remove)$/.exec(at.path);
    if (job) {
      const id = decodeSegment(job[1]!);
      const jobPage = href(ctx, jobPath(id));
      if (job[2] === 'retry') {
        const r = await jobs.retry(id);
        return ok(r.retried ? `Job ${id} is queued again.` : `Job ${id} is ${r.status}: only dead or cancelled jobs can be retried.`, back(at, form, jobPage));
      }
      if (job[2] === 'cancel') {
        const children = form.get('children') === '1';
        const r = await jobs.cancel(id, children ? { children: true } : {});
        const text = !r.cancelled
          ? `Job ${id} had already finished (${r.status}).`
          : r.status === 'running'
            ? `Cancel of job ${id} requested: it stops within one heartbeat.`
            : `Job ${id} is cancelled.`;
        const n = r.cascaded;
        const cascaded =
          n === undefined
            ? ''
            : n === 0
              ? ' It had no unfinished children or dependents.'
              : ` ${n === 1 ? '1 child or dependent was' : `${n} children and dependents were`} cancelled too (running ones stop within one heartbeat).`;
        return ok(text + cascaded, back(at, form, jobPage));
      }
      const r = await jobs.remove(id);
      return r.removed
        ? ok(`Job ${id} was removed.`, back(at, form, href(ctx, '/jobs')))
        : ok(`Job ${id} is ${r.status}: cancel it before removing it.`, back(at, form, jobPage));
    }
    const queue = /^\/actions\/queues\/([^/]+)\/(pause|resume)$/.exec(at.path);
    if (queue) {
      const name = decodeSegment(queue[1]!);
      if (queue[2] === 'pause') await queues.pause(name);
      else await queues.resume(name);
      return ok(
        queue[2] === 'pause' ? `Queue ${name} is paused: no job of it starts until it is resumed.` : `Queue ${name} is resumed.`,
        back(at, form, href(ctx, '/')),
      );
    }
    if (at.path === '/actions/dead-letters/retry' || at.path === '/actions/dead-letters/purge') {
      const name = form.get('name') || undefined;
      const queueName = form.get('queue') || undefined;
      const selection = { ...(name ? { name } : {}), ...(queueName ? { queue: queueName } : {}) };
      const list = href(ctx, '/jobs', { status: 'dead', ...selection });
      if (at.path.endsWith('/retry')) {
        let skipped = 0;
        const replayed = await deadLetters.retry(selection, { onSkipped: (letters) => (skipped = letters.length) });
        return ok(`${replayed} dead letter${replayed === 1 ? '' : 's'} queued again${skipped ? `; ${skipped} could not be (see the server log)` : ''}.`, list);
      }
      const before = Number(form.get('before'));
      if (form.get('confirm') !== 'purge' || !Number.isSafeInteger(before)) {
        throw new PageError(400, 'Not confirmed', 'A purge needs its confirmation page: use the Purge button on the dead letters.');
      }
      const n = await deadLetters.purge({ ...selection, before: new Date(before) });
      return ok(`${n} dead letter${n === 1 ? '' : 's'} deleted.`, list);
    }
    const schedule = /^\/actions\/schedules\/([^/]+)\/(pause|resume|trigger)$/.exec(at.path);
    if (schedule) {
      const name = decodeSegment(schedule[1]!);
      const list = href(ctx, '/schedules');
      if (schedule[2] === 'pause') {
        await schedules.pause(name);
        return ok(`Schedule ${name} is paused.`, list);
      }
      if (schedule[2] === 'resume') {
        await schedules.resume(name);
        return ok(`Schedule ${name} is resumed: it fires again from its next slot.`, list);
      }
      const { id } = await schedules.trigger(name);
      return ok(`A run of ${name} is queued: job ${id}.`, list);
    }
    throw new PageError(404, 'Not found', `The dashboard has no action at ${at.path}.`);
  }

  // ---- downloads -----------------------------------------------------------------------------------

  /**
   * `<base>/jobs/<id>/payload.json` and `result.json`: the job's payload or result as a JSON file
   * (dates as ISO strings), for values the page shows cut (a large payload the store keeps outside
   * the job's record). Read-only like every page; written in slices as the socket takes them. A job
   * that does not exist, or has no result, is a 404 in plain text.
   */
  async function downloadValue(res: ServerResponse, segment: string, kind: 'payload' | 'result', head: boolean): Promise<void> {
    let id: string;
    try {
      id = decodeURIComponent(segment);
    } catch {
      return send(res, 400, 'Bad link: this link is not one the dashboard made.', 'text/plain; charset=utf-8', head);
    }
    const job = id.length > MAX_FILTER_CHARS ? null : await jobs.get(id);
    const value = kind === 'payload' ? job?.payload : job?.result;
    if (!job || value === undefined) {
      const what = job ? `Job ${id} has no ${kind}.` : `No job with id ${id}: it never existed, or it was removed.`;
      return send(res, 404, what, 'text/plain; charset=utf-8', head);
    }
    const text = JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2) ?? 'null';
    const body = Buffer.from(text);
    res.statusCode = 200;
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.setHeader('Content-Length', body.length);
    res.setHeader('Cache-Control', 'no-store');
    // The id is a store's (hex, or MemoryStore's words): anything else is replaced in the file name.
    res.setHeader('Content-Disposition', `attachment; filename="${id.replace(/[^A-Za-z0-9_-]/g, '_')}-${kind}.json"`);
    if (head) return void res.end();
    for (let at = 0; at < body.length && !res.destroyed; at += DOWNLOAD_SLICE) {
      if (res.write(body.subarray(at, at + DOWNLOAD_SLICE))) continue;
      // A client that goes away never drains: its close ends the wait too.
      await new Promise<void>((resolve) => {
        res.once('drain', resolve);
        res.once('close', resolve);
      });
    }
    res.end();
  }

  // ---- the handler ---------------------------------------------------------------------------------

  async function handle(req: IncomingMessage, res: ServerResponse, at: Located): Promise<void> {
    setSecurityHeaders(res);
    const method = req.method ?? 'GET';
    if (method === 'POST') {
      if (!at.path.startsWith('/actions/')) return send(res, 405, 'Method not allowed', 'text/plain; charset=utf-8');
      return act(req, res, at);
    }
    if (method !== 'GET' && method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD, POST');
      return send(res, 405, 'Method not allowed', 'text/plain; charset=utf-8');
    }
    if (at.path.startsWith('/assets/')) {
      const asset = assets.files.get(at.path.slice('/assets/'.length));
      if (!asset) return send(res, 404, 'Not found', 'text/plain; charset=utf-8');
      res.setHeader('Cache-Control', at.query.get('v') === assets.version ? 'public, max-age=31536000, immutable' : 'no-cache');
      return send(res, 200, asset.body, asset.contentType, method === 'HEAD');
    }
    if (at.path === '/events') {
      const job = at.query.get('job');
      const topicName = at.query.get('topic');
      const topic: LiveTopic | undefined = job
        ? { kind: 'job', id: job }
        : topicName === 'queues' || topicName === 'schedules' || topicName === 'workers'
          ? { kind: topicName }
          : undefined;
      if (!topic) return send(res, 400, 'Unknown topic', 'text/plain; charset=utf-8');
      return feed.open(req, res, topic, at.query.get('v') ?? '');
    }
    if (at.path.startsWith('/actions/')) {
      res.setHeader('Allow', 'POST');
      return send(res, 405, 'Actions are POSTs', 'text/plain; charset=utf-8');
    }
    const jump = at.path === '/jobs' ? at.query.get('id')?.trim() : undefined;
    if (jump) return jumpToJob(req, res, at, jump);
    const value = /^\/jobs\/([^/]+)\/(payload|result)\.json$/.exec(at.path);
    if (value) return downloadValue(res, value[1]!, value[2] as 'payload' | 'result', method === 'HEAD');
    return renderPage(req, res, at);
  }

  const dashboard = ((req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void) => {
    const at = locate(req, basePath);
    if (!at) {
      if (next) return next();
      setSecurityHeaders(res);
      return send(res, 404, 'Not found', 'text/plain; charset=utf-8');
    }
    handle(req, res, at).catch((err: unknown) => {
      logger.error({ err, path: at.path }, `dashboard: ${req.method} ${at.path} failed`);
      if (!res.headersSent) send(res, 500, 'Internal error; see the server log', 'text/plain; charset=utf-8');
      else res.end();
    });
  }) as LoomDashboard;
  dashboard.close = () => feed.close();
  dashboard.refresh = () => feed.poll();
  return dashboard;
}
