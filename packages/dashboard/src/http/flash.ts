import type { IncomingMessage, ServerResponse } from 'node:http';
import { readCookie, setCookie } from './cookies.js';
import type { Csrf } from './csrf.js';

const COOKIE = 'loom_flash';

/** A one-time message shown on the page an action redirects to ("Retried 12 dead letters"). */
export interface Flash {
  kind: 'ok' | 'error';
  text: string;
}

/**
 * Flash messages travel in a short-lived signed cookie, not in the redirect's URL: URLs keep
 * nothing but ids and filters, and a message cannot be forged by a link.
 */
export class FlashCookie {
  constructor(
    private readonly csrf: Csrf,
    private readonly cookiePath: string,
  ) {}

  set(req: IncomingMessage, res: ServerResponse, flash: Flash): void {
    const value = Buffer.from(JSON.stringify(flash)).toString('base64url');
    setCookie(req, res, COOKIE, `${value}.${this.csrf.sign(value)}`, { path: this.cookiePath, maxAgeSeconds: 60 });
  }

  /** The message waiting for this page, clearing it. */
  take(req: IncomingMessage, res: ServerResponse): Flash | undefined {
    const raw = readCookie(req, COOKIE);
    if (raw === undefined) return undefined;
    setCookie(req, res, COOKIE, '', { path: this.cookiePath, maxAgeSeconds: 0 });
    const [value, signature] = raw.split('.');
    if (!value || signature !== this.csrf.sign(value)) return undefined;
    try {
      const parsed = JSON.parse(Buffer.from(value, 'base64url').toString('utf8')) as Flash;
      if ((parsed.kind === 'ok' || parsed.kind === 'error') && typeof parsed.text === 'string') return { kind: parsed.kind, text: parsed.text };
    } catch {
      // A mangled cookie shows nothing.
    }
    return undefined;
  }
}
