import { afterEach, describe, expect, test } from '@jest/globals';
import { startFixture, type DashboardFixture } from './fixture.js';
import { Visitor } from './http-client.js';

// Issue 34, item 7: the UTC / local / relative time toggle, as the server writes it. The page
// script that applies it is exercised in Chromium (browser.test.ts).
let fixture: DashboardFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

describe('times and the time toggle', () => {
  test('every page carries the toggle, hidden until the script shows it', async () => {
    fixture = await startFixture();
    const v = new Visitor(fixture.url);
    for (const path of ['/loom/', '/loom/jobs', `/loom/jobs/${fixture.ids.dead[0]}`, '/loom/schedules', '/loom/workers']) {
      const page = (await v.get(path)).text;
      const toggle = /<span class="time-toggle" id="time-toggle" role="group" aria-label="Show times as" hidden>(.*?)<\/span>/.exec(page);
      expect({ path, toggle: toggle?.[1]?.match(/data-time-mode="(\w+)" aria-pressed="(\w+)"/g) }).toEqual({
        path,
        toggle: ['data-time-mode="relative" aria-pressed="true"', 'data-time-mode="utc" aria-pressed="false"', 'data-time-mode="local" aria-pressed="false"'],
      });
    }
  });

  test('a time reads relative, with its exact instant in datetime and its UTC time in the title', async () => {
    fixture = await startFixture();
    const f = fixture;
    const job = (await f.store.getJob(f.ids.dead[0]!))!;
    f.clock.advance(3 * 60_000); // the fixture ends at 12:00:02; the job was made at 12:00:00
    const page = (await new Visitor(f.url).get(`/loom/jobs/${job.id}`)).text;
    const created = job.createdAt.toISOString();
    expect(page).toContain(`<time datetime="${created}" title="${created.slice(0, 10)} ${created.slice(11, 19)} UTC" data-when>3 min 2 s ago</time>`);
    // Without script nothing else is needed: every time element names its instant.
    const times = page.match(/<time [^>]*>/g) ?? [];
    expect(times.length).toBeGreaterThan(2);
    for (const t of times) expect(t).toMatch(/datetime="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z".* data-when/);
  });

  test('the purge confirmation names its cut-off as a toggled time', async () => {
    fixture = await startFixture();
    const page = (await new Visitor(fixture.url).get('/loom/dead-letters/purge')).text;
    expect(page).toContain('died before <time datetime="2026-03-10T12:00:02.000Z" data-when="date">2026-03-10 12:00:02 UTC</time>');
  });
});
