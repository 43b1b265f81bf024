import { html, type Html } from '../html/html.js';
import { panel } from './components.js';
import { layout } from './layout.js';
import { href, type PageContext } from './page-context.js';

/** A page that only says something: not found, a bad filter, a refused action. */
export function messagePage(ctx: PageContext, title: string, message: string): Html {
  return layout(ctx, {
    title,
    body: html`<h1>${title}</h1>${panel('message', undefined, html`<p data-test="message">${message}</p><p><a href="${href(ctx, '/')}">Back to the queues</a></p>`)}`,
  });
}
