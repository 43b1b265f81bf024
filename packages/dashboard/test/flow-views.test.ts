import { afterEach, describe, expect, test } from '@jest/globals';
import { ImportBatch, SendReceipt, startFixture, type DashboardFixture } from './fixture.js';
import { Visitor } from './http-client.js';

// Issue 31, items 4 and 5 (dashboard): a job's dependencies, dependents and batch, the batch page,
// and cancel with children, over HTTP.
let fixture: DashboardFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

async function start(): Promise<DashboardFixture & { flows: NonNullable<DashboardFixture['flows']> }> {
  fixture = await startFixture({ flows: true });
  return fixture as DashboardFixture & { flows: NonNullable<DashboardFixture['flows']> };
}

/** The markup of the panel with this id (up to its end). */
function section(page: string, id: string): string {
  const at = page.indexOf(`<section class="panel" id="${id}"`);
  if (at < 0) return '';
  return page.slice(at, page.indexOf('</section>', at));
}

/** The markup of one table row of a job. */
function row(markup: string, id: string): string {
  const at = markup.indexOf(`<tr data-job="${id}"`);
  if (at < 0) return '';
  return markup.slice(at, markup.indexOf('</tr>', at));
}

describe('a job with dependencies', () => {
  test('its page lists each dependency with name, status and whether it is still unmet, and its policy', async () => {
    const f = await start();
    const { met, unmet, report } = f.flows;
    expect((await f.store.getJob(report))!.status).toBe('waiting');
    const page = (await new Visitor(f.url).get(`/loom/jobs/${report}`)).text;
    const deps = section(page, 'job-depends-on');
    expect(deps).toContain('Depends on (2, 1 unmet)');
    expect(row(deps, met)).toContain(`href="/loom/jobs/${met}"`);
    expect(row(deps, met)).toContain('import-batch');
    expect(row(deps, met)).toContain('status-completed');
    expect(row(deps, met)).toContain('>met<');
    expect(row(deps, unmet)).toContain('status-queued');
    expect(row(deps, unmet)).toContain('>unmet<');
    expect(deps).toContain('this job is cancelled (onDependencyFailure: cancel)');
    // The state line says it waits for its dependencies, and how many are unmet.
    expect(page).toMatch(/data-test="state">waiting for 1 dependency to complete \(1 of 2 unmet\)</);
  });

  test('a dependency that dies says so, and what the policy does', async () => {
    const f = await start();
    const dead = await f.t.enqueue(ImportBatch, { batch: 1, fail: true });
    await f.t.runUntilIdle();
    const after = await f.t.enqueue(SendReceipt, { orderId: 'o-d', email: 'd@example.com' }, { dependsOn: [dead.id], onDependencyFailure: 'run' });
    const page = (await new Visitor(f.url).get(`/loom/jobs/${after.id}`)).text;
    expect(row(section(page, 'job-depends-on'), dead.id)).toContain('failed');
    expect(section(page, 'job-depends-on')).toContain('this job runs anyway (onDependencyFailure: run)');
  });

  test("a dependency's page lists its dependents, newest first, the name escaped", async () => {
    const f = await start();
    const { met, report } = f.flows;
    const second = await f.t.enqueue(SendReceipt, { orderId: 'o-2nd', email: 'x@example.com' }, { dependsOn: [met] });
    const page = (await new Visitor(f.url).get(`/loom/jobs/${met}`)).text;
    const dependents = section(page, 'job-dependents');
    expect(dependents).toContain('Dependents (2)');
    expect(dependents.indexOf(second.id)).toBeLessThan(dependents.indexOf(report));
    expect(row(dependents, report)).toContain('build &lt;b&gt;report&lt;/b&gt;');
    expect(page).not.toContain('<b>report</b>');
    expect(row(dependents, report)).toContain('status-waiting');
    // A job with neither has no such panels.
    const plain = (await new Visitor(f.url).get(`/loom/jobs/${f.ids.completed}`)).text;
    expect(plain).not.toContain('id="job-depends-on"');
    expect(plain).not.toContain('id="job-dependents"');
  });

  test('a job with many dependents shows the newest 50 and says so', async () => {
    const f = await start();
    const root = await f.t.enqueue(SendReceipt, { orderId: 'o-root', email: 'r@example.com' }, { delay: '1h' });
    const ids: string[] = [];
    for (let i = 0; i < 52; i++) ids.push((await f.t.enqueue(SendReceipt, { orderId: `o-${i}`, email: 'r@example.com' }, { dependsOn: [root.id] })).id);
    const dependents = section((await new Visitor(f.url).get(`/loom/jobs/${root.id}`)).text, 'job-dependents');
    expect(dependents).toContain('Dependents (newest 50 of 52)');
    expect(dependents.match(/<tr data-job=/g)).toHaveLength(50);
    expect(dependents).toContain(ids[51]!);
    expect(dependents).not.toContain(`"${ids[0]!}"`);
  });
});

describe('batches', () => {
  test("a member's page links to its batch with its progress; a callback's says whose it is", async () => {
    const f = await start();
    const { batch, members } = f.flows;
    const member = (await new Visitor(f.url).get(`/loom/jobs/${members[0]}`)).text;
    expect(member).toContain(`<dt>Batch</dt><dd><a class="mono" data-test="batch" href="/loom/batches/${batch}">${batch}</a>`);
    expect(member).toContain('3 of 3 ended');
    const callbacks = await f.store.listJobs({ name: 'imports-done' });
    expect(callbacks).toHaveLength(2);
    const failure = callbacks.find((c) => c.batchCallback?.on === 'failure')!;
    const page = (await new Visitor(f.url).get(`/loom/jobs/${failure.id}`)).text;
    expect(page).toContain(`<dt>Callback of</dt><dd>batch <a class="mono" data-test="batch" href="/loom/batches/${batch}">${batch}</a> (on failure)`);
  });

  test('the batch page shows its counts, progress, times, failed members and callbacks', async () => {
    const f = await start();
    const { batch, failedMember } = f.flows;
    const res = await new Visitor(f.url).get(`/loom/batches/${batch}`);
    expect(res.status).toBe(200);
    const counts = Object.fromEntries([...res.text.matchAll(/data-count="(\w+)">(\d+)</g)].map((m) => [m[1], Number(m[2])]));
    expect(counts).toEqual({ total: 3, completed: 2, dead: 1, cancelled: 0, pending: 0 });
    expect(res.text).toContain('<progress max="100" value="100" aria-label="3 of 3 members ended">');
    expect(res.text).toMatch(/<dt>Finished<\/dt><dd><time/);
    const failed = section(res.text, 'batch-failed');
    expect(failed).toContain('Failed members (1)');
    expect(failed).toContain(`href="/loom/jobs/${failedMember}"`);
    const callbacks = section(res.text, 'batch-callbacks');
    expect(callbacks).toContain('data-callback="complete"');
    expect(callbacks).toContain('data-callback="failure"');
    expect(callbacks).not.toContain('data-callback="success"');
  });

  test('a batch in progress says what is pending and that no callback ran yet', async () => {
    const f = await start();
    const created = await f.t.batches.create({
      jobs: [
        { job: ImportBatch, payload: { batch: 1 } },
        { job: ImportBatch, payload: { batch: 2 }, options: { delay: '1h' } },
      ],
      onSuccess: { job: SendReceipt, payload: { orderId: 'o-b', email: 'b@example.com' } },
    });
    await f.t.runUntilIdle();
    const page = (await new Visitor(f.url).get(`/loom/batches/${created.id}`)).text;
    expect(page).toMatch(/data-count="completed">1</);
    expect(page).toMatch(/data-count="pending">1</);
    expect(page).toContain('1 of 2 ended');
    expect(page).toContain('not yet: 1 pending');
    expect(section(page, 'batch-callbacks')).toContain('None yet: callbacks are enqueued when every member has ended.');
  });

  test('failed members are capped at 50', async () => {
    const f = await start();
    const created = await f.t.batches.create({ jobs: Array.from({ length: 53 }, (_, i) => ({ job: ImportBatch, payload: { batch: i, fail: true } })) });
    await f.t.runUntilIdle();
    const failed = section((await new Visitor(f.url).get(`/loom/batches/${created.id}`)).text, 'batch-failed');
    expect(failed).toContain('Failed members (first 50 of 53)');
    expect(failed.match(/<li>/g)).toHaveLength(50);
  });

  test('an unknown batch is the 404 page, its id escaped', async () => {
    const f = await start();
    const res = await new Visitor(f.url).get(`/loom/batches/${encodeURIComponent('<img src=x onerror=alert(1)>')}`);
    expect(res.status).toBe(404);
    expect(res.text).toContain('Batch not found');
    expect(res.text).toContain('No batch with id &lt;img src=x onerror=alert(1)&gt;');
    expect(res.text).not.toContain('<img src=x');
  });
});

describe('cancel with children', () => {
  test('the cancel form offers the checkbox; checked, children and dependents end cancelled and the flash says how many', async () => {
    const f = await start();
    const root = await f.t.enqueue(SendReceipt, { orderId: 'o-root', email: 'r@example.com' }, { delay: '1h' });
    const dependent = await f.t.enqueue(SendReceipt, { orderId: 'o-dep', email: 'r@example.com' }, { dependsOn: [root.id] });
    const second = await f.t.enqueue(SendReceipt, { orderId: 'o-dep2', email: 'r@example.com' }, { dependsOn: [dependent.id] });
    const now = f.clock.now();
    const [child] = await f.store.enqueue(
      [
        {
          name: 'send-receipt',
          queue: 'emails',
          payload: { orderId: 'o-child', email: 'c@example.com' },
          priority: 0,
          runAt: new Date(now.getTime() + 3_600_000),
          maxAttempts: 1,
          parentId: root.id,
        },
      ],
      { now },
    );
    const other = await f.t.enqueue(SendReceipt, { orderId: 'o-other', email: 'r@example.com' }, { delay: '1h' });
    const v = new Visitor(f.url);
    const page = await v.page(`/loom/jobs/${root.id}`);
    expect(page.text).toContain(
      '<input type="checkbox" name="children" value="1" data-keep data-test="cancel-children"> also cancel its children and dependents',
    );
    const res = await v.post(`/loom/actions/jobs/${root.id}/cancel`, { children: '1' });
    expect(res.status).toBe(303);
    for (const id of [root.id, dependent.id, second.id, child!.id])
      expect({ id, status: (await f.store.getJob(id))!.status }).toEqual({ id, status: 'cancelled' });
    expect((await f.store.getJob(other.id))!.status).toBe('queued');
    expect((await v.get(res.location!)).text).toContain(`Job ${root.id} is cancelled. 3 children and dependents were cancelled too`);
  });

  test('unchecked, only the job is cancelled: its dependents then follow their own policy', async () => {
    const f = await start();
    const root = await f.t.enqueue(SendReceipt, { orderId: 'o-root', email: 'r@example.com' }, { delay: '1h' });
    const dependent = await f.t.enqueue(SendReceipt, { orderId: 'o-dep', email: 'r@example.com' }, { dependsOn: [root.id], onDependencyFailure: 'run' });
    const v = new Visitor(f.url);
    await v.page(`/loom/jobs/${root.id}`);
    const res = await v.post(`/loom/actions/jobs/${root.id}/cancel`);
    expect((await f.store.getJob(root.id))!.status).toBe('cancelled');
    expect((await f.store.getJob(dependent.id))!.status).not.toBe('cancelled');
    const flash = (await v.get(res.location!)).text;
    expect(flash).toContain(`Job ${root.id} is cancelled.`);
    expect(flash).not.toContain('children and dependents were');
  });

  test('cancel with children keeps the CSRF and read-only checks', async () => {
    const f = await start();
    const root = await f.t.enqueue(SendReceipt, { orderId: 'o-root', email: 'r@example.com' }, { delay: '1h' });
    const dependent = await f.t.enqueue(SendReceipt, { orderId: 'o-dep', email: 'r@example.com' }, { dependsOn: [root.id] });
    const v = new Visitor(f.url);
    await v.page(`/loom/jobs/${root.id}`);
    expect((await v.post(`/loom/actions/jobs/${root.id}/cancel`, { children: '1', _csrf: 'forged' })).status).toBe(403);
    const foreign = new Visitor(f.url, { origin: 'https://evil.example' });
    await foreign.page(`/loom/jobs/${root.id}`);
    expect((await foreign.post(`/loom/actions/jobs/${root.id}/cancel`, { children: '1' })).status).toBe(403);
    expect((await f.store.getJob(root.id))!.status).toBe('queued');
    expect((await f.store.getJob(dependent.id))!.status).toBe('waiting');
  });
});
