import { afterEach, describe, expect, test } from '@jest/globals';
import { request } from 'node:http';
import { CONTENT_SECURITY_POLICY } from '../src/index.js';
import { FlakyWebhook, SCRIPT_PAYLOAD, SendReceipt, startFixture, type DashboardFixture } from './fixture.js';
import { Visitor } from './http-client.js';

let fixture: DashboardFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

async function start(options: Parameters<typeof startFixture>[0] = {}): Promise<DashboardFixture> {
  fixture = await startFixture(options);
  return fixture;
}

async function deadCount(f: DashboardFixture): Promise<number> {
  return (await f.store.listQueues()).reduce((n, q) => n + q.counts.dead, 0);
}

describe('escaping', () => {
  test('a payload, an error, a step name and progress holding markup are shown as text', async () => {
    const f = await start();
    const v = new Visitor(f.url);
    const payloadPage = (await v.get(`/loom/jobs/${f.ids.scriptPayload}`)).text;
    expect(payloadPage).not.toContain('<script>window.__pwned');
    expect(payloadPage).not.toContain('<img src=x');
    expect(payloadPage).toContain('&lt;script&gt;window.__pwned = true&lt;/script&gt;&lt;img src=x onerror=\\&quot;window.__pwned = true\\&quot;&gt;');

    const deadPage = (await v.get(`/loom/jobs/${f.ids.dead[0]}`)).text;
    expect(deadPage).toContain('&lt;b&gt;502&lt;/b&gt; from https://hooks.example/down: &lt;script&gt;');
    expect(deadPage).not.toMatch(/<b>502/);

    const workflow = (await v.get(`/loom/jobs/${f.ids.workflow}`)).text;
    expect(workflow).toContain('charge &lt;card&gt;');
    expect(workflow).toContain('&lt;i&gt;not markup&lt;/i&gt;');
    expect(workflow).not.toContain('<card>');

    const list = (await v.get('/loom/jobs?status=dead')).text;
    expect(list).not.toMatch(/<script>window/);
    // The only script element on any page is the package's file.
    for (const page of [payloadPage, deadPage, workflow, list]) expect(page.match(/<script/g)).toHaveLength(1);
  });

  test('a job id in the URL is escaped on the not-found page', async () => {
    const f = await start();
    const res = await new Visitor(f.url).get(`/loom/jobs/${encodeURIComponent('<img src=x onerror=alert(1)>')}`);
    expect(res.status).toBe(404);
    expect(res.text).toContain('No job with id &lt;img src=x onerror=alert(1)&gt;');
  });
});

describe('security headers', () => {
  test('every response carries the strict Content-Security-Policy and no inline script', async () => {
    const f = await start();
    const v = new Visitor(f.url);
    const page = await v.page('/loom/jobs?status=dead');
    const responses = [
      page.res,
      (await v.get('/loom/')).res,
      (await v.get('/loom/schedules')).res,
      (await v.get('/loom/assets/dashboard.js')).res,
      (await v.get('/loom/assets/dashboard.css')).res,
      (await v.get('/loom/nowhere')).res,
      (await v.get('/loom/jobs?status=nope')).res,
      (await v.post(`/loom/actions/jobs/${f.ids.dead[0]}/retry`)).res,
      (await v.post(`/loom/actions/jobs/${f.ids.dead[1]}/retry`, { _csrf: 'forged' })).res,
    ];
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 404, 400, 303, 403]);
    for (const res of responses) {
      expect(res.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('x-frame-options')).toBe('DENY');
    }
    expect(CONTENT_SECURITY_POLICY).toContain("script-src 'self'");
    expect(CONTENT_SECURITY_POLICY).not.toContain('unsafe-inline');
    expect(page.text).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(page.text).not.toMatch(/\sstyle=/);
    expect(page.text).not.toMatch(/\son[a-z]+=/i);
  });

  test('the live-update stream carries the policy too', async () => {
    const f = await start();
    const headers = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const req = request(`${f.url}/loom/events?topic=queues&v=x`, (res) => {
        resolve(res.headers);
        res.destroy();
      });
      req.on('error', reject);
      req.end();
    });
    expect(headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
  });
});

describe('actions', () => {
  test('without authorize the dashboard is read-only: no buttons, and a POST changes nothing', async () => {
    const f = await start({ authorize: undefined });
    const v = new Visitor(f.url);
    const page = await v.page('/loom/jobs?status=dead');
    expect(page.text).not.toContain('<form class="inline" method="post"');
    expect(page.text).toContain('read-only');
    const res = await v.post(`/loom/actions/jobs/${f.ids.dead[0]}/retry`, { _csrf: 'x' });
    expect(res.status).toBe(403);
    expect(res.text).toContain('read-only');
    expect((await f.store.getJob(f.ids.dead[0]!))!.status).toBe('dead');
  });

  test('authorize(req) decides per request: refused requests see no buttons and change nothing', async () => {
    const f = await start({ authorize: (req) => req.headers['x-role'] === 'admin' });
    const viewer = new Visitor(f.url, { 'x-role': 'viewer' });
    const viewerPage = await viewer.page('/loom/jobs?status=dead');
    expect(viewerPage.text).not.toContain('data-test="retry-job"');
    // Even with a valid token of its own, a refused visitor cannot act.
    const admin = new Visitor(f.url, { 'x-role': 'admin' });
    const adminPage = await admin.page('/loom/jobs?status=dead');
    expect(adminPage.text).toContain('data-test="retry-job"');
    const refused = await viewer.post(`/loom/actions/jobs/${f.ids.dead[0]}/retry`, { _csrf: admin.lastToken! });
    expect(refused.status).toBe(403);
    expect((await f.store.getJob(f.ids.dead[0]!))!.status).toBe('dead');
    const done = await admin.post(`/loom/actions/jobs/${f.ids.dead[0]}/retry`);
    expect(done.status).toBe(303);
    expect((await f.store.getJob(f.ids.dead[0]!))!.status).toBe('queued');
  });

  test('a POST needs the CSRF token of its own cookie', async () => {
    const f = await start();
    const alice = new Visitor(f.url);
    const mallory = new Visitor(f.url);
    await alice.page('/loom/jobs?status=dead');
    await mallory.page('/loom/jobs?status=dead');
    const id = f.ids.dead[0]!;
    expect((await alice.post(`/loom/actions/jobs/${id}/retry`, { _csrf: '' })).status).toBe(403);
    expect((await alice.post(`/loom/actions/jobs/${id}/retry`, { _csrf: mallory.lastToken! })).status).toBe(403);
    // No cookie at all (a cross-site form the browser sent without the SameSite=Strict cookie).
    expect((await new Visitor(f.url).post(`/loom/actions/jobs/${id}/retry`, { _csrf: alice.lastToken! })).status).toBe(403);
    expect((await f.store.getJob(id))!.status).toBe('dead');
    const ok = await alice.post(`/loom/actions/jobs/${id}/retry`);
    expect(ok.status).toBe(303);
    expect(ok.location).toBe(`/loom/jobs/${id}`);
    expect((await f.store.getJob(id))!.status).toBe('queued');
    // The outcome shows once, on the page the action redirected to.
    expect((await alice.get(ok.location!)).text).toContain(`Job ${id} is queued again.`);
    expect((await alice.get(ok.location!)).text).not.toContain('is queued again');
  });

  test('the CSRF cookie is HttpOnly, SameSite=Strict and scoped to the dashboard', async () => {
    const f = await start();
    const res = await fetch(`${f.url}/loom/`);
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('loom_csrf='))!;
    expect(cookie).toMatch(/; Path=\/loom; HttpOnly; SameSite=Strict/);
  });

  test('actions are POSTs: a GET on an action changes nothing', async () => {
    const f = await start();
    const res = await new Visitor(f.url).get(`/loom/actions/jobs/${f.ids.dead[0]}/retry`);
    expect(res.status).toBe(405);
    expect((await f.store.getJob(f.ids.dead[0]!))!.status).toBe('dead');
  });

  test('retry all matching dead letters, then purge with confirmation', async () => {
    const f = await start();
    const v = new Visitor(f.url);
    await v.page('/loom/jobs?status=dead');
    const none = await v.post('/loom/actions/dead-letters/retry', { name: 'send-receipt' });
    expect(none.location).toBe('/loom/jobs?status=dead&name=send-receipt');
    expect(await deadCount(f)).toBe(2);
    const all = await v.post('/loom/actions/dead-letters/retry', { name: 'flaky-webhook' });
    expect(all.status).toBe(303);
    expect((await v.get(all.location!)).text).toContain('2 dead letters queued again.');
    expect(await deadCount(f)).toBe(0);

    await f.t.advance('10s'); // they fail again and die again
    expect(await deadCount(f)).toBe(2);
    const confirm = await v.page('/loom/dead-letters/purge?queue=webhooks');
    expect(confirm.text).toContain('<strong>2</strong> of them');
    // Without the confirmation page's fields nothing is deleted.
    expect((await v.post('/loom/actions/dead-letters/purge', { queue: 'webhooks' })).status).toBe(400);
    expect(await deadCount(f)).toBe(2);
    const before = /name="before" value="(\d+)"/.exec(confirm.text)![1]!;
    const purged = await v.post('/loom/actions/dead-letters/purge', { queue: 'webhooks', before, confirm: 'purge' });
    expect(purged.status).toBe(303);
    expect((await v.get(purged.location!)).text).toContain('2 dead letters deleted.');
    expect(await deadCount(f)).toBe(0);
  });

  test('a purge deletes only the letters that had died when its confirmation was shown', async () => {
    const f = await start();
    const v = new Visitor(f.url);
    const confirm = await v.page('/loom/dead-letters/purge');
    const before = /name="before" value="(\d+)"/.exec(confirm.text)![1]!;
    f.clock.advance('1m');
    await f.t.enqueue(FlakyWebhook, { url: 'https://hooks.example/later' });
    await f.t.advance('5s');
    expect(await deadCount(f)).toBe(3);
    await v.post('/loom/actions/dead-letters/purge', { before, confirm: 'purge' });
    expect(await deadCount(f)).toBe(1);
  });

  test('pause and resume a queue', async () => {
    const f = await start();
    const v = new Visitor(f.url);
    await v.page('/loom/');
    expect((await v.post('/loom/actions/queues/emails/pause')).status).toBe(303);
    expect(await f.store.pausedQueues()).toEqual(['emails']);
    expect((await v.get('/loom/')).text).toMatch(/data-queue="emails"><td>.*<span class="badge paused">paused<\/span>/);
    await v.post('/loom/actions/queues/emails/resume');
    expect(await f.store.pausedQueues()).toEqual([]);
  });

  test('cancel a queued job and remove it', async () => {
    const f = await start();
    const v = new Visitor(f.url);
    const { id } = await f.t.enqueue(SendReceipt, { orderId: 'o-x', email: 'x@example.com' }, { delay: '1h' });
    await v.page(`/loom/jobs/${id}`);
    await v.post(`/loom/actions/jobs/${id}/cancel`);
    expect((await f.store.getJob(id))!.status).toBe('cancelled');
    const removed = await v.post(`/loom/actions/jobs/${id}/remove`);
    expect(removed.location).toBe('/loom/jobs');
    expect(await f.store.getJob(id)).toBeNull();
    expect((await v.post(`/loom/actions/jobs/${id}/remove`)).status).toBe(404);
  });

  test('schedules: pause, resume and run now', async () => {
    const f = await start();
    const v = new Visitor(f.url);
    const page = await v.page('/loom/schedules');
    expect(page.text).toContain('data-schedule="nightly-report"');
    expect(page.text).toContain('0 3 * * *');
    await v.post('/loom/actions/schedules/nightly-report/pause');
    expect((await f.store.listSchedules())[0]!.paused).toBe(true);
    await v.post('/loom/actions/schedules/nightly-report/resume');
    expect((await f.store.listSchedules())[0]!.paused).toBe(false);
    const triggered = await v.post('/loom/actions/schedules/nightly-report/trigger');
    expect((await v.get(triggered.location!)).text).toMatch(/A run of nightly-report is queued: job /);
    expect((await f.store.listJobs({ name: 'nightly-report' })).length).toBe(1);
    expect((await v.post('/loom/actions/schedules/nope/pause')).status).toBe(404);
  });
});

describe('pages', () => {
  test('the jobs list pages by keyset: every job once, newest first, then no next link', async () => {
    const f = await start({ pageSize: 7 });
    for (let i = 0; i < 20; i++) {
      await f.t.enqueue(SendReceipt, { orderId: `bulk-${i}`, email: 'bulk@example.com' }, { delay: '1h' });
      f.clock.advance('1s');
    }
    const v = new Visitor(f.url);
    const seen: string[] = [];
    let path: string | undefined = '/loom/jobs?status=queued&name=send-receipt';
    let pages = 0;
    while (path) {
      const text: string = (await v.get(path)).text;
      seen.push(...[...text.matchAll(/<tr data-job="([^"]+)"/g)].map((m) => m[1]!));
      const next: string | undefined = /rel="next" data-test="next-page" href="([^"]+)"/.exec(text)?.[1];
      path = next?.replaceAll('&amp;', '&');
      pages++;
    }
    expect(pages).toBe(3);
    const expected = (await f.store.listJobPage({ statuses: ['queued'], name: 'send-receipt', limit: 100 })).map((j) => j.id);
    expect(expected).toHaveLength(21);
    expect(seen).toEqual(expected);
  });

  test('filters are plain values: an unknown status or a forged cursor is a 400, a bracketed key is no filter', async () => {
    const f = await start();
    const v = new Visitor(f.url);
    expect((await v.get('/loom/jobs?status=%24ne')).status).toBe(400);
    expect((await v.get('/loom/jobs?cursor=abc')).status).toBe(400);
    expect((await v.get('/loom/jobs?cursor=%7B%22%24gt%22%3A1%7D')).status).toBe(400);
    const bracketed = await v.get('/loom/jobs?name[$ne]=x');
    expect(bracketed.status).toBe(200);
    expect([...bracketed.text.matchAll(/<tr data-job=/g)].length).toBe(9); // every job
    const byQueue = await v.get('/loom/jobs?queue=webhooks');
    expect([...byQueue.text.matchAll(/<tr data-job=/g)].length).toBe(2);
  });

  test('find a job: jump to an id, search by idempotency key and by payload fields', async () => {
    const f = await start();
    await f.t.enqueue(SendReceipt, { orderId: 'o-key', email: 'k@example.com' }, { idempotencyKey: 'receipt:o-key' });
    const v = new Visitor(f.url);
    const ids = (text: string) => [...text.matchAll(/<tr data-job="([^"]+)"/g)].map((m) => m[1]!);
    const jump = await v.get(`/loom/jobs?id=${f.ids.workflow}`);
    expect(jump.status).toBe(303);
    expect(jump.res.headers.get('location')).toBe(`/loom/jobs/${f.ids.workflow}`);
    const missing = await v.get('/loom/jobs?id=%3Cb%3Enope');
    expect(missing.status).toBe(404);
    expect(missing.text).toContain('No job with id &lt;b&gt;nope');

    const [keyed] = (await f.store.listJobs({ idempotencyKey: 'receipt:o-key' })).map((j) => j.id);
    expect(ids((await v.get('/loom/jobs?key=receipt%3Ao-key')).text)).toEqual([keyed]);
    expect(ids((await v.get('/loom/jobs?key=receipt%3Anone')).text)).toEqual([]);

    const byOrder = (await v.get(`/loom/jobs?payload=${encodeURIComponent('orderId=o-1')}`)).text;
    expect(ids(byOrder).sort()).toEqual([f.ids.workflow, f.ids.completed, await childOf(f, f.ids.workflow)].sort());
    const both = (await v.get(`/loom/jobs?payload=${encodeURIComponent('orderId=o-1 email="buyer1@example.com"')}`)).text;
    expect(ids(both)).toEqual([f.ids.completed]);
    // The search is kept in the form and in the status tabs.
    expect(both).toContain('value="orderId=o-1 email=&quot;buyer1@example.com&quot;"');
    expect(both).toMatch(/href="\/loom\/jobs\?[^"]*payload=orderId%3Do-1/);
    // Operators and bad paths are refused, not run.
    expect((await v.get(`/loom/jobs?payload=${encodeURIComponent('$where=1')}`)).status).toBe(400);
    expect((await v.get(`/loom/jobs?payload=${encodeURIComponent('orderId')}`)).status).toBe(400);
    expect((await v.get(`/loom/jobs?payload=${encodeURIComponent('a..b=1')}`)).status).toBe(400);
  });

  test('a job page shows attempts, steps, progress, parent and children', async () => {
    const f = await start();
    const v = new Visitor(f.url);
    const text = (await v.get(`/loom/jobs/${f.ids.workflow}`)).text;
    for (const step of ['reserve-stock', 'charge &lt;card&gt;', 'enqueue:send-receipt#1', 'wait-for-pickup']) expect(text).toContain(`data-step="${step}"`);
    expect(text).toContain('Children (1)');
    const child = /id="job-children".*?<tr data-job="([^"]+)"/s.exec(text)![1]!;
    const childPage = (await v.get(`/loom/jobs/${child}`)).text;
    expect(childPage).toContain(`data-test="parent" href="/loom/jobs/${f.ids.workflow}"`);
    const dead = (await v.get(`/loom/jobs/${f.ids.dead[0]}`)).text;
    expect(dead.match(/<li class="attempt">/g)).toHaveLength(2);
    expect(dead).toContain('<summary>Stack</summary><pre>Error: &lt;b&gt;502');
  });

  test('live updates: a stream whose page is out of date hears of it, and hears of later changes', async () => {
    const f = await start({ refreshInterval: '1h' });
    const events: string[] = [];
    const res = await fetch(`${f.url}/loom/events?topic=queues&v=stale`);
    const reader = res.body!.getReader();
    const next = async (): Promise<string> => {
      for (;;) {
        const { value } = (await reader.read()) as { value?: Uint8Array };
        const text = new TextDecoder().decode(value);
        if (text.includes('event: change')) return text;
      }
    };
    events.push(await next()); // the page was rendered with another fingerprint
    await f.t.enqueue(SendReceipt, { orderId: 'live', email: SCRIPT_PAYLOAD }, { delay: '1h' });
    await f.dashboard.refresh();
    events.push(await next());
    expect(events).toHaveLength(2);
    expect(events.join('')).not.toContain('live'); // no job data in the stream
    await reader.cancel();
  });

  test("a live update fetched while an action's redirect loads leaves the action's message to that page", async () => {
    const f = await start();
    const { id } = await f.t.enqueue(SendReceipt, { orderId: 'o-flash', email: 'flash@example.com' }, { delay: '1h' });
    const v = new Visitor(f.url);
    const jobPage = `/loom/jobs/${id}`;
    await v.page(jobPage);
    const posted = await v.post(`/loom/actions/jobs/${id}/cancel`);
    expect(posted.status).toBe(303);
    // The cancel's change reaches the page being left, whose script fetches it again (dashboard.js).
    const update = await v.get(jobPage, { 'x-loom-live-update': '1' });
    expect(update.status).toBe(200);
    expect(update.text).not.toContain('class="flash');
    // The page the redirect leads to still shows the message, once.
    expect((await v.get(posted.location!)).text).toContain(`Job ${id} is cancelled.`);
    expect((await v.get(posted.location!)).text).not.toContain(`Job ${id} is cancelled.`);
  });
});

describe('Origin of actions', () => {
  function post(url: string, origin: string | undefined): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const body = '_csrf=forged';
      const req = request(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': Buffer.byteLength(body), ...(origin ? { Origin: origin } : {}) },
      });
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  test('a POST whose Origin is another site is refused (403) before anything else is looked at', async () => {
    const f = await start();
    const url = `${f.url}/loom/actions/queues/emails/pause`;
    const evil = await post(url, 'https://evil.example');
    expect(evil.status).toBe(403);
    expect(evil.text).toContain('Cross-origin request');
    // Its own origin, none, or `null` (Chromium's under no-referrer) reaches the CSRF check, which refuses the forged token.
    const own = await post(url, f.url);
    expect(own.status).toBe(403);
    expect(own.text).toContain('Form expired');
    expect((await post(url, undefined)).text).toContain('Form expired');
    expect((await post(url, 'null')).text).toContain('Form expired');
    expect(await f.store.pausedQueues()).toEqual([]);
  });
});

/** The id of a job's first child. */
async function childOf(f: DashboardFixture, parentId: string): Promise<string> {
  const [child] = await f.store.listJobs({ parentId, limit: 1 });
  return child!.id;
}
