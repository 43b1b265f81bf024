import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import type { Browser, Page } from 'puppeteer-core';
import { launchChromium, screenshot, watchedPage, type PageElement } from './chromium.js';
import { startFixture, type DashboardFixture } from './fixture.js';
import { Visitor } from './http-client.js';

// Issue 35 on the dashboard: Approve / Reject a wait token and Fork a workflow from a step, in
// Chromium, through the same Origin / CSRF / authorize checks as every other action.
let browser: Browser;
let f: DashboardFixture;
let page: Page;
let problems: string[];

beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

async function open(): Promise<void> {
  f = await startFixture({ workflows: true });
  ({ page, problems } = await watchedPage(browser));
  // Reject asks for a confirmation first: say yes.
  page.on('dialog', (dialog) => void dialog.accept());
}

afterEach(async () => {
  await page?.close();
  await f?.close();
  expect(problems).toEqual([]);
});

const text = (selector: string) => page.$eval(selector, (el: PageElement) => el.textContent ?? '');

async function click(selector: string): Promise<void> {
  await Promise.all([page.waitForNavigation(), page.click(selector)]);
}

/** Replaces the text of a form box (the output box starts with `{}`). */
async function type(selector: string, value: string): Promise<void> {
  await page.click(selector, { clickCount: 3 });
  await page.keyboard.press('Backspace');
  await page.$eval(selector, (el) => ((el as unknown as { value: string }).value = ''));
  await page.type(selector, value);
}

async function onlyToken(jobId: string) {
  const tokens = await f.t.tokens.list(jobId);
  expect(tokens).toHaveLength(1);
  return tokens[0]!;
}

describe('wait tokens on the job page', () => {
  test('Approve: an output the schema refuses changes nothing and says why; a valid one resumes the job', async () => {
    await open();
    const jobId = f.workflows!.review;
    const token = await onlyToken(jobId);
    await page.goto(`${f.url}/loom/jobs/${jobId}`);
    expect(await text('#job-tokens h2')).toBe('Wait tokens (1 pending)');
    expect(await text(`[data-token="${token.id}"]`)).toContain('in 2 d 23 h'); // created 31 minutes ago with a 3-day timeout
    expect(await text('[data-test="token-schema"]')).toContain('"approved"');
    expect(await page.$eval('[data-test="token-output"]', (el) => (el as unknown as { value: string }).value)).toBe('{}');

    await type('[data-test="token-output"]', '{"approved":"yes"}');
    await click('[data-test="approve-token"]');
    expect(await text('.flash')).toMatch(/^Wait token wt_\S+: the output at approved is refused: .*; nothing changed, send a valid output$/);
    expect(await f.t.tokens.get(token.id)).toMatchObject({ status: 'pending' });
    expect(await f.t.getJob(jobId)).toMatchObject({ status: 'waiting' });

    await type('[data-test="token-output"]', '{not json');
    await click('[data-test="approve-token"]');
    expect(await text('.flash')).toContain('The output is not JSON');
    expect(await f.t.tokens.get(token.id)).toMatchObject({ status: 'pending' });

    await type('[data-test="token-output"]', '{"approved":true,"note":"ok by <b>ana</b>"}');
    await click('[data-test="approve-token"]');
    expect(await text('.flash')).toBe(`Token ${token.id} approved: the job resumes.`);
    expect(await f.t.tokens.get(token.id)).toMatchObject({ status: 'completed', output: { approved: true, note: 'ok by <b>ana</b>' } });
    expect(await page.$$eval('[data-test="approve-token"]', (els) => els.length)).toBe(0);
    expect(await text(`[data-token="${token.id}"]`)).toContain('completed');
    await screenshot(page, 'wait-token-approved');
    await f.t.runUntilIdle();
    expect(await f.t.getJob(jobId)).toMatchObject({ status: 'completed', result: { refunded: true, amount: 4200 } });
  });

  test('a second decision on a stale page says the token was already completed and changes nothing', async () => {
    await open();
    const jobId = f.workflows!.review;
    const token = await onlyToken(jobId);
    await page.goto(`${f.url}/loom/jobs/${jobId}`);
    // Another reviewer decides first (the CLI, a signed link, another tab).
    expect(await f.t.tokens.complete(token.id, { approved: false })).toEqual({ completed: true, status: 'completed' });
    await click('[data-test="approve-token"]');
    expect(await text('.flash')).toBe(`Token ${token.id} was already completed: nothing changed.`);
    expect(await f.t.tokens.get(token.id)).toMatchObject({ status: 'completed', output: { approved: false } });
  });

  test('Reject with a reason resumes the job with the rejection', async () => {
    await open();
    const jobId = f.workflows!.review;
    const token = await onlyToken(jobId);
    await page.goto(`${f.url}/loom/jobs/${jobId}`);
    await page.type('[data-test="token-reason"]', 'refund is over the limit');
    await click('[data-test="reject-token"]');
    expect(await text('.flash')).toBe(`Token ${token.id} rejected: the job resumes with the rejection.`);
    expect(await f.t.tokens.get(token.id)).toMatchObject({ status: 'rejected', reason: 'refund is over the limit' });
    await f.t.runUntilIdle();
    expect((await f.t.getJob(jobId))?.result).toMatchObject({ refunded: false, reason: expect.stringContaining('refund is over the limit') });
  });

  test('a cancelled job: its token shows cancelled, with no buttons', async () => {
    await open();
    const jobId = f.workflows!.review;
    const token = await onlyToken(jobId);
    await f.t.jobs.cancel(jobId);
    await page.goto(`${f.url}/loom/jobs/${jobId}`);
    expect(await text(`[data-token="${token.id}"]`)).toContain(`cancelled`);
    expect(await text(`[data-token="${token.id}"]`)).toContain(`its job ${jobId} is cancelled and no longer waits for it`);
    expect(await page.$$eval('[data-test="approve-token"]', (els) => els.length)).toBe(0);
  });

  test("a decision without the form's CSRF token, or from another site, is refused and changes nothing", async () => {
    await open();
    const jobId = f.workflows!.review;
    const token = await onlyToken(jobId);
    const visitor = new Visitor(f.url);
    await visitor.page(`/loom/jobs/${jobId}`);
    const action = `/loom/actions/tokens/${token.id}/complete`;
    expect((await visitor.post(action, { _csrf: 'forged', output: '{"approved":true}' })).status).toBe(403);
    const foreign = new Visitor(f.url, { origin: 'https://evil.example' });
    await foreign.page(`/loom/jobs/${jobId}`);
    expect((await foreign.post(action, { output: '{"approved":true}' })).status).toBe(403);
    expect(await f.t.tokens.get(token.id)).toMatchObject({ status: 'pending' });
    const done = await visitor.post(action, { output: '{"approved":true}' });
    expect({ status: done.status, location: done.location }).toEqual({ status: 303, location: `/loom/jobs/${jobId}` });
    expect(await f.t.tokens.get(token.id)).toMatchObject({ status: 'completed' });
  });
});

describe('fork from a step on the job page', () => {
  test('forks a finished workflow from a chosen step, with a new payload, and opens the new job', async () => {
    await open();
    const original = f.workflows!.finished;
    const before = await f.t.getJob(original);
    await page.goto(`${f.url}/loom/jobs/${original}`);
    expect(await page.$$eval('[data-test="fork-step"] option', (els: PageElement[]) => els.map((e) => e.getAttribute('value')))).toEqual([
      'download',
      'parse',
      'cool-down',
      'publish',
    ]);
    await page.select('[data-test="fork-step"]', 'publish');
    await page.type('[data-test="fork-payload"]', '{nope');
    await click('[data-test="fork-job"]');
    expect(await text('.flash')).toContain('The payload is not JSON');
    expect(page.url()).toBe(`${f.url}/loom/jobs/${original}`);

    await page.select('[data-test="fork-step"]', 'publish');
    await type('[data-test="fork-payload"]', '{"rerun":true}');
    await click('[data-test="fork-job"]');
    const flash = await text('.flash');
    const forkId = /this is the new job (\S+)\.$/.exec(flash)?.[1];
    expect(flash).toBe(`Forked job ${original} from step "publish" (kept 3 steps): this is the new job ${forkId}.`);
    expect(page.url()).toBe(`${f.url}/loom/jobs/${forkId}`);
    // The fixture's engine runs the fork at once: it kept the first three steps and ran publish again.
    await f.t.runUntilIdle();
    const fork = await f.t.getJob(forkId!);
    expect(fork).toMatchObject({ name: 'nightly-import', status: 'completed', payload: { rerun: true }, forkedFrom: original });
    expect(fork?.steps.map((s) => [s.name, s.at.getTime() === before!.steps.find((o) => o.name === s.name)!.at.getTime()])).toEqual([
      ['download', true],
      ['parse', true],
      ['cool-down', true],
      ['publish', false],
    ]);
    expect(await f.t.getJob(original)).toEqual(before);
  });

  test('forks without a payload: the original payload is kept; a job without steps has no fork control', async () => {
    await open();
    const original = f.workflows!.review;
    await page.goto(`${f.url}/loom/jobs/${original}`);
    await page.select('[data-test="fork-step"]', 'approval-token');
    await click('[data-test="fork-job"]');
    const forkId = /this is the new job (\S+)\.$/.exec(await text('.flash'))?.[1];
    expect(await f.t.getJob(forkId!)).toMatchObject({ payload: { orderId: 'o-refund', amount: 4200 }, forkedFrom: original });
    // The fork made a token of its own and waits for it; the original's is untouched.
    await f.t.runUntilIdle();
    expect((await f.t.getJob(forkId!))?.steps.map((s) => s.name)).toEqual(['check-order', 'approval-token', 'waitForToken#1']);
    const [forkToken] = await f.t.tokens.list(forkId!);
    expect(forkToken).toMatchObject({ status: 'pending', jobId: forkId });
    expect(forkToken!.id).not.toBe((await onlyToken(original)).id);

    await page.goto(`${f.url}/loom/jobs/${f.ids.completed}`);
    expect(await page.$$eval('[data-test="fork-job"]', (els) => els.length)).toBe(0);
  });
});
