import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readCookie, setCookie } from './cookies.js';

const COOKIE = 'loom_csrf';
const VISITOR_ID = /^[A-Za-z0-9_-]{43}$/;

/**
 * CSRF tokens for the dashboard's forms: each browser gets a random id in an HttpOnly,
 * SameSite=Strict cookie, and every form carries HMAC(secret, id). A POST is accepted only when
 * its token matches its cookie: another site can make the browser send the cookie, but cannot
 * read the page to learn the token. The secret is the dashboard's (random per process unless
 * given, so several instances behind one load balancer share a configured one).
 */
export class Csrf {
  constructor(
    private readonly secret: Buffer,
    private readonly cookiePath: string,
  ) {}

  /** The token for this browser, giving it a visitor id first when it has none. */
  tokenFor(req: IncomingMessage, res: ServerResponse): string {
    let visitor = readCookie(req, COOKIE);
    if (visitor === undefined || !VISITOR_ID.test(visitor)) {
      visitor = randomBytes(32).toString('base64url');
      setCookie(req, res, COOKIE, visitor, { path: this.cookiePath });
      // Later reads in this request (a page rendering two forms) see the new id.
      req.headers.cookie = `${req.headers.cookie ? `${req.headers.cookie}; ` : ''}${COOKIE}=${visitor}`;
    }
    return this.sign(visitor);
  }

  /** Whether `token` is this browser's. */
  verify(req: IncomingMessage, token: unknown): boolean {
    const visitor = readCookie(req, COOKIE);
    if (visitor === undefined || !VISITOR_ID.test(visitor) || typeof token !== 'string') return false;
    const expected = Buffer.from(this.sign(visitor));
    const given = Buffer.from(token);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  /** HMAC of `value`, for other values the dashboard hands out and takes back (the flash cookie). */
  sign(value: string): string {
    return createHmac('sha256', this.secret).update(value).digest('base64url');
  }
}
