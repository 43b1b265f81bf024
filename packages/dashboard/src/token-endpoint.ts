import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  ConsoleLogger,
  LoomError,
  SystemClock,
  Tokens,
  verifyWaitTokenSignature,
  MIN_WAIT_TOKEN_SECRET_LENGTH,
  type Clock,
  type JobStore,
  type Logger,
  type Loom,
  type TokenResult,
  type WaitTokenRecord,
} from '@loom/core';
import { html, type Html } from './html/html.js';
import { BodyTooLargeError } from './errors.js';
import { readBody, readForm } from './http/form-body.js';
import { locate } from './http/mount.js';
import { normalizeBasePath } from './options.js';
import { CONTENT_SECURITY_POLICY, setSecurityHeaders } from './http/security-headers.js';

/** Options of {@link tokenEndpoint}. */
export interface TokenEndpointOptions {
  /** The Loom whose `tokens` settle the tokens (its workers resume the run at once). Give this or `store`. */
  loom?: Pick<Loom, 'tokens'>;
  /** Or a bare store (the engines sharing it resume the run at their next poll). */
  store?: JobStore;
  /** The key the links were signed with: `Loom.create({ waitTokens: { secret } })`. */
  secret: string;
  /** Where the endpoint is mounted, e.g. `'/loom/tokens'` (the path of `waitTokens.publicUrl`). @default the framework's mount path, or `'/'` */
  basePath?: string;
  /** The output the page's Approve button completes a token with. @default `{ approved: true }` */
  approveOutput?: unknown;
  /** Time for the store operations. @default the system clock */
  clock?: Clock;
  /** @default console */
  logger?: Logger;
}

/** A JSON body (`{ output }` or `{ reject: true, reason? }`) is a few fields; outputs are capped like a step. */
const MAX_JSON_BYTES = 1024 * 1024;

/**
 * A request handler that settles wait tokens from the signed links `token.url` holds
 * (`Loom.create({ waitTokens: { publicUrl, secret } })`), for links sent by e-mail or chat:
 * - `GET <base>/<token id>?sig=…` shows the token with Approve and Reject buttons. It never
 *   changes anything, so a mail scanner that follows links settles nothing.
 * - `POST` from those buttons (a form: `decision=approve|reject`, `reason`), or with a JSON body
 *   `{ "output": … }` / `{ "reject": true, "reason": "…" }`, settles it; JSON requests get
 *   `{ completed, status }` back (a used link: `completed: false`, nothing changed).
 *
 * The signature is an HMAC-SHA256 of the token id, compared in constant time: a forged or altered
 * link is refused (403) before the store is read. Responses carry `Referrer-Policy: no-referrer`.
 */
export function tokenEndpoint(options: TokenEndpointOptions): (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void) => void {
  if (typeof options !== 'object' || options === null) throw new LoomError('INVALID_ARGUMENT', 'tokenEndpoint needs options { loom or store, secret }');
  const { secret } = options;
  if (typeof secret !== 'string' || secret.length < MIN_WAIT_TOKEN_SECRET_LENGTH) {
    throw new LoomError(
      'INVALID_ARGUMENT',
      `tokenEndpoint secret must be the waitTokens.secret of Loom.create, at least ${MIN_WAIT_TOKEN_SECRET_LENGTH} characters`,
    );
  }
  const clock = options.clock ?? new SystemClock();
  const logger = options.logger ?? new ConsoleLogger();
  let tokens: Pick<Tokens, 'get' | 'complete' | 'reject'>;
  if (options.loom) tokens = options.loom.tokens;
  else if (options.store) tokens = new Tokens({ store: options.store, clock });
  else throw new LoomError('INVALID_ARGUMENT', 'tokenEndpoint needs `loom` (a Loom) or `store` (a JobStore)');
  const basePath = options.basePath === undefined ? undefined : normalizeBasePath(options.basePath);
  const approveOutput = options.approveOutput === undefined ? { approved: true } : options.approveOutput;

  async function handle(req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void): Promise<void> {
    const located = locate(req, basePath);
    if (!located) {
      if (next) return next();
      return send(res, 404, page('Not found', html`<p>Nothing here.</p>`));
    }
    setSecurityHeaders(res);
    res.setHeader('Cache-Control', 'no-store');
    const segments = located.path.split('/').filter((s) => s !== '');
    const id = segments.length === 1 ? safeDecode(segments[0]!) : undefined;
    const sig = located.query.get('sig');
    if (id === undefined || !verifyWaitTokenSignature(id, sig, secret))
      return send(res, 403, page('Link not valid', html`<p>This link is not valid. Ask for a new one.</p>`));
    const json = (req.headers['content-type'] ?? '').startsWith('application/json');
    try {
      if (req.method === 'GET' || req.method === 'HEAD') {
        const token = await tokens.get(id);
        if (!token) return send(res, 404, page('Unknown token', html`<p>This request no longer exists.</p>`));
        return send(res, 200, tokenPage(token, located.path, sig!));
      }
      if (req.method !== 'POST') {
        res.setHeader('Allow', 'GET, HEAD, POST');
        return send(res, 405, page('Not allowed', html`<p>Use the buttons of the page.</p>`));
      }
      let result: TokenResult;
      if (json) {
        const body = await readJson(req);
        if (body.reject === true) result = await tokens.reject(id, typeof body.reason === 'string' ? body.reason : undefined);
        else result = await tokens.complete(id, body.output);
        res.setHeader('Content-Type', 'application/json; charset=utf-8');
        res.statusCode = 200;
        res.end(JSON.stringify(result));
        return;
      }
      const form = await readForm(req);
      const decision = form.get('decision');
      if (decision === 'approve') result = await tokens.complete(id, approveOutput);
      else if (decision === 'reject') result = await tokens.reject(id, form.get('reason') || undefined);
      else return send(res, 400, page('Bad request', html`<p>Choose Approve or Reject.</p>`));
      const done = result.completed
        ? html`<p>Thank you: the request was ${result.status === 'completed' ? 'approved' : 'rejected'}.</p>`
        : result.status === 'cancelled'
          ? html`<p>This request no longer needs an answer (${result.reason ?? 'it was cancelled'}); nothing changed.</p>`
          : html`<p>This request was already ${result.status}; nothing changed.</p>`;
      return send(res, 200, page(result.completed ? 'Done' : 'Already decided', done));
    } catch (err) {
      if (err instanceof BodyTooLargeError || err instanceof SyntaxError) return reply(res, json, 400, 'INVALID_ARGUMENT', err.message);
      if (LoomError.is(err, 'WAIT_TOKEN_NOT_FOUND')) return reply(res, json, 404, err.code, 'This request no longer exists.');
      if (LoomError.is(err, 'INVALID_TOKEN_OUTPUT') || LoomError.is(err, 'INVALID_ARGUMENT')) return reply(res, json, 400, err.code, err.message);
      logger.error({ err, tokenId: id }, 'token endpoint: could not settle the token');
      return reply(res, json, 500, 'STORE_ERROR', 'Something went wrong; try the link again later.');
    }
  }

  return (req, res, next) => {
    handle(req, res, next).catch((err: unknown) => {
      logger.error({ err }, 'token endpoint: the request failed');
      if (!res.headersSent) send(res, 500, page('Error', html`<p>Something went wrong.</p>`));
    });
  };
}

function safeDecode(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

async function readJson(req: IncomingMessage & { body?: unknown }): Promise<Record<string, unknown>> {
  let value: unknown;
  if (req.readableEnded || (req as { _body?: boolean })._body === true) value = req.body;
  else value = JSON.parse(await readBody(req, MAX_JSON_BYTES, 'body'));
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new SyntaxError('The body must be a JSON object: { "output": ... } or { "reject": true, "reason": "..." }');
  return value as Record<string, unknown>;
}

function reply(res: ServerResponse, json: boolean, status: number, code: string, message: string): void {
  if (!json) return send(res, status, page('Not done', html`<p>${message}</p>`));
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.end(JSON.stringify({ error: { code, message } }));
}

function send(res: ServerResponse, status: number, body: Html): void {
  res.statusCode = status;
  res.setHeader('Content-Security-Policy', PAGE_POLICY);
  res.setHeader('Content-Type', 'text/html; charset=utf-8');
  res.end(body.markup);
}

/** The page is opened from an e-mail on any screen: readable type, buttons large enough to tap. */
const PAGE_STYLE =
  'body{font:16px/1.5 system-ui,sans-serif;margin:0;padding:24px;color:#1f2328;background:#f6f8fa}' +
  'main{max-width:560px;margin:0 auto;background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:24px}' +
  'h1{font-size:22px;margin:0 0 12px}form{margin:16px 0 0}label{display:block;margin-bottom:8px}' +
  'input{display:block;width:100%;box-sizing:border-box;font:inherit;padding:8px;margin-top:4px;border:1px solid #8c959f;border-radius:6px}' +
  'button{font:inherit;padding:10px 20px;border-radius:6px;border:1px solid #8c959f;background:#fff;cursor:pointer}' +
  'button[value=approve]{background:#1a7f37;border-color:#1a7f37;color:#fff}';

/**
 * The dashboard's policy with this one stylesheet allowed by its hash: the endpoint may be mounted
 * without the dashboard's asset route, and no other inline style can apply.
 */
const PAGE_POLICY = CONTENT_SECURITY_POLICY.replace("style-src 'self'", `style-src 'sha256-${createHash('sha256').update(PAGE_STYLE).digest('base64')}'`);

function page(title: string, body: Html): Html {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex"><title>${title}</title>
<style>${PAGE_STYLE}</style></head>
<body><main><h1>${title}</h1>${body}</main></body></html>`;
}

function tokenPage(token: WaitTokenRecord, path: string, sig: string): Html {
  if (token.status !== 'pending') return page('Already decided', html`<p>This request was already ${token.status}; nothing to do.</p>`);
  // Relative to the page: works under any mount. The form posts to this same signed URL.
  const action = `./${
    path
      .split('/')
      .filter((s) => s !== '')
      .pop() ?? ''
  }?sig=${encodeURIComponent(sig)}`;
  const until = token.timeoutAt ? html`<p>Open until ${token.timeoutAt.toISOString()}.</p>` : '';
  const about = html`<p>Job <code>${token.jobId}</code> is waiting for this decision.</p>`;
  return page(
    'Decision needed',
    html`${about}${until}<form method="post" action="${action}"><button type="submit" name="decision" value="approve">Approve</button></form>
<form method="post" action="${action}"><label>Reason <input name="reason" maxlength="1000"></label> <button type="submit" name="decision" value="reject">Reject</button></form>`,
  );
}
