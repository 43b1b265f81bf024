import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startFixture, type DashboardFixture } from './fixture.js';
import { Visitor } from './http-client.js';

// Issue 34, item 3: the job page shows the ctx.log lines the job kept (JobRecord.logs).
let f: DashboardFixture;
beforeAll(async () => {
  f = await startFixture();
});
afterAll(async () => {
  await f.close();
});

describe('the job page log panel', () => {
  test('lists the kept lines oldest first, each attempt, level coloured, messages and fields as text', async () => {
    const page = (await new Visitor(f.url).get(`/loom/jobs/${f.ids.dead[0]}`)).text;
    const panel = page.slice(page.indexOf('<section class="panel" id="job-logs">'));
    const lines = [...panel.slice(0, panel.indexOf('</section>')).matchAll(/<li class="log-line log-(\w+)" data-level="\w+">(.*?)<\/li>/g)];
    // Two attempts of four lines each.
    expect(lines.map((l) => l[1])).toEqual(['debug', 'info', 'warn', 'error', 'debug', 'info', 'warn', 'error']);
    expect(panel).toContain('<h2>Logs (8)</h2>');
    expect(lines[4]![2]).toContain('<span class="log-attempt" title="attempt 2">#2</span>');
    expect(lines[1]![2]).toMatch(/<time datetime="2026-03-10T12:00:00\.000Z" title="2026-03-10 12:00:00 UTC" data-when="clock">12:00:00\.000<\/time>/);
    expect(lines[1]![2]).toContain(
      'POST https://hooks.example/down <code class="log-fields">{&quot;url&quot;:&quot;https://hooks.example/down&quot;,&quot;bytes&quot;:512}</code>',
    );
    // Markup in a message or a field is text.
    expect(lines[2]![2]).toContain('the hook answered 502 &lt;b&gt;Bad Gateway&lt;/b&gt;');
    expect(lines[2]![2]).toContain('&lt;script&gt;window.__pwned = true&lt;/script&gt;');
    expect(panel).not.toMatch(/<b>Bad|<script>window/);
    expect(lines[3]![2]).toContain('{&quot;err&quot;:{&quot;name&quot;:&quot;Error&quot;,&quot;message&quot;:&quot;502 Bad Gateway&quot;}}');
  });

  test('says when no line was kept', async () => {
    const page = (await new Visitor(f.url).get(`/loom/jobs/${f.ids.completed}`)).text;
    expect(page).toContain('<h2>Logs (0)</h2>');
    expect(page).toContain('<p class="empty" data-test="no-logs">No log lines were kept: the handler wrote nothing to ctx.log.</p>');
  });
});
