import { createHash } from 'node:crypto';
import 'reflect-metadata';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { Job, MemoryStore, signWaitToken, type JobContext, type WaitToken } from '@loom/core';
import { createTestLoom, FakeClock, type TestLoom } from '@loom/testing';
import { tokenEndpoint } from '@loom/dashboard';

const SECRET = 'k'.repeat(40);
const Decision = z.object({ approved: z.boolean() });
const tokens: WaitToken<{ approved: boolean }>[] = [];

@Job({ name: 'token-endpoint-review' })
class Review {
  async run(_: undefined, ctx: JobContext): Promise<unknown> {
    const token = await ctx.step('token', () => ctx.createWaitToken({ schema: Decision }));
    tokens.push(token);
    try {
      return await ctx.waitForToken(token);
    } catch (err) {
      return (err as { code?: string }).code;
    }
  }
}

let server: Server | undefined;
let loom: TestLoom | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await loom?.stop();
  server = undefined;
  loom = undefined;
  tokens.length = 0;
});

/** A Loom whose token links point at an endpoint served under /loom/tokens, and a waiting run's token. */
async function setUp(): Promise<{ base: string; token: WaitToken<{ approved: boolean }>; jobId: string }> {
  server = createServer();
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  loom = await createTestLoom({
    jobs: [Review],
    store: new MemoryStore(),
    clock: new FakeClock(),
    waitTokens: { publicUrl: `${base}/loom/tokens/`, secret: SECRET },
  });
  const endpoint = tokenEndpoint({ loom, secret: SECRET, basePath: '/loom/tokens' });
  server.on('request', (req, res) => endpoint(req, res));
  const { id } = await loom.enqueue(Review, undefined);
  await loom.runUntilIdle();
  return { base, token: tokens[0]!, jobId: id };
}

const form = (url: string, fields: Record<string, string>) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });

describe('tokenEndpoint', () => {
  it('a signed link shows the decision without settling it; its Approve button completes the token once', async () => {
    const { base, token, jobId } = await setUp();
    expect(token.url).toBe(`${base}/loom/tokens/${token.id}?sig=${signWaitToken(token.id, SECRET)}`);
    const page = await fetch(token.url!);
    expect(page.status).toBe(200);
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    const markup = await page.text();
    expect(markup).toContain('value="approve"');
    expect(markup).toContain(jobId);
    // Its one stylesheet is allowed by its hash, so the page is styled wherever it is mounted; no other inline style is.
    const style = /<style>(.*?)<\/style>/s.exec(markup)?.[1] ?? '';
    const policy = page.headers.get('content-security-policy') ?? '';
    expect(policy).toContain(`style-src 'sha256-${createHash('sha256').update(style).digest('base64')}'`);
    expect(policy).not.toContain('unsafe-inline');
    expect(await loom!.tokens.get(token.id)).toMatchObject({ status: 'pending' });

    const approved = await form(token.url!, { decision: 'approve' });
    expect(approved.status).toBe(200);
    expect(await approved.text()).toContain('approved');
    await loom!.runUntilIdle();
    expect(await loom!.getJob(jobId)).toMatchObject({ status: 'completed', result: { approved: true } });

    const again = await fetch(token.url!, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ output: { approved: false } }),
    });
    expect(await again.json()).toEqual({ completed: false, status: 'completed' });
  });

  it('refuses a forged or altered link before reading the store', async () => {
    const { base, token } = await setUp();
    const forged = `${base}/loom/tokens/${token.id}?sig=${signWaitToken(token.id, 'x'.repeat(40))}`;
    const altered = token.url!.replace(token.id, `${token.id.slice(0, -1)}${token.id.endsWith('A') ? 'B' : 'A'}`);
    for (const url of [forged, altered, `${base}/loom/tokens/${token.id}`, `${token.url!}x`]) {
      expect((await form(url, { decision: 'approve' })).status).toBe(403);
      expect((await fetch(url)).status).toBe(403);
    }
    expect(await loom!.tokens.get(token.id)).toMatchObject({ status: 'pending' });
  });

  it('JSON: completes with a checked output, or rejects with a reason', async () => {
    const { token, jobId } = await setUp();
    const post = (body: unknown) => fetch(token.url!, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const bad = await post({ output: { approved: 'yes' } });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { code: 'INVALID_TOKEN_OUTPUT' } });
    expect(await (await post({ reject: true, reason: 'not today' })).json()).toEqual({ completed: true, status: 'rejected' });
    await loom!.runUntilIdle();
    expect(await loom!.getJob(jobId)).toMatchObject({ status: 'completed', result: 'TOKEN_REJECTED' });
  });
});
