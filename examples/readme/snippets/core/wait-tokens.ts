import { z } from 'zod';
import { Container } from 'inversify';
import { MemoryStore } from '@loom/core';
import { Mailer } from '../placeholders.js';

declare const mailer: Mailer;
declare const secret: string; // e.g. process.env.LOOM_TOKEN_SECRET: 32+ random characters

import { Job, Loom, LoomError, type JobContext } from '@loom/core';

const Approval = z.object({ approved: z.boolean(), by: z.string() });

@Job({ name: 'publish-article' })
class PublishArticle {
  async run(article: { id: string; editor: string }, ctx: JobContext) {
    // In a step: a retried attempt gets the same token back instead of making a second one.
    const token = await ctx.step('approval-token', () => ctx.createWaitToken({ timeout: '3d', schema: Approval }));
    await ctx.step('ask', () => mailer.send(article.editor, `Approve ${article.id}: ${token.url}`));
    try {
      const decision = await ctx.waitForToken(token); // suspends: no worker is held for the 3 days
      return decision.approved ? { published: true, by: decision.by } : { published: false };
    } catch (err) {
      if (LoomError.is(err, 'TOKEN_REJECTED') || LoomError.is(err, 'TOKEN_TIMEOUT')) return { published: false };
      throw err;
    }
  }
}

const loom = await Loom.create({
  container: new Container(),
  store: new MemoryStore(),
  jobs: [PublishArticle],
  waitTokens: { publicUrl: 'https://app.example/loom/tokens', secret }, // makes token.url a signed link
});

declare const tokenId: string;
await loom.tokens.complete(tokenId, { approved: true, by: 'ana' }); // { completed: true, status: 'completed' }
await loom.tokens.complete(tokenId, { approved: true, by: 'bob' }); // { completed: false, status: 'completed' }: nothing changed
await loom.tokens.reject(tokenId, 'not today'); // the wait throws TokenRejectedError (when it comes first)
