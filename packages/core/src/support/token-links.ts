import { createHmac, timingSafeEqual } from 'node:crypto';
import { InvalidArgumentError } from './errors.js';

/** Where wait-token links point and the key that signs them (`Loom.create({ waitTokens })`). */
export interface WaitTokenLinkOptions {
  /** The URL the token endpoint is mounted at, e.g. `https://app.example/loom/tokens`; a link is `<publicUrl>/<token id>?sig=<signature>`. */
  publicUrl: string;
  /** The HMAC key (at least 32 characters); the same as `tokenEndpoint({ secret })`. Rotating it voids the links sent before. */
  secret: string;
}

/** The shortest secret accepted: 32 characters (a random 256-bit key in hex is 64). */
export const MIN_WAIT_TOKEN_SECRET_LENGTH = 32;

/** Checks `waitTokens` options; throws `INVALID_ARGUMENT` naming the bad one. */
export function checkWaitTokenLinkOptions(options: WaitTokenLinkOptions): WaitTokenLinkOptions {
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('Loom option "waitTokens"', 'must be { publicUrl, secret }');
  const { publicUrl, secret } = options;
  let url: URL;
  try {
    url = new URL(publicUrl);
  } catch {
    throw new InvalidArgumentError('Loom option "waitTokens.publicUrl"', `must be an absolute http(s) URL, got ${JSON.stringify(publicUrl)}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new InvalidArgumentError('Loom option "waitTokens.publicUrl"', 'must be an http(s) URL');
  checkSecret(secret, 'Loom option "waitTokens.secret"');
  return { publicUrl: publicUrl.replace(/\/+$/, ''), secret };
}

/** Throws `INVALID_ARGUMENT` unless `secret` is a string of at least {@link MIN_WAIT_TOKEN_SECRET_LENGTH} characters. */
export function checkSecret(secret: unknown, what: string): string {
  if (typeof secret !== 'string' || secret.length < MIN_WAIT_TOKEN_SECRET_LENGTH) {
    throw new InvalidArgumentError(what, `must be a string of at least ${MIN_WAIT_TOKEN_SECRET_LENGTH} characters (e.g. 32 random bytes in hex)`);
  }
  return secret;
}

/** The signature of a token link: HMAC-SHA256 of the token id under `secret`, base64url. */
export function signWaitToken(tokenId: string, secret: string): string {
  return createHmac('sha256', secret).update(`loom-wait-token:${tokenId}`).digest('base64url');
}

/** Whether `signature` is the signature of `tokenId` under `secret`, compared in constant time. */
export function verifyWaitTokenSignature(tokenId: string, signature: unknown, secret: string): boolean {
  if (typeof signature !== 'string') return false;
  const expected = Buffer.from(signWaitToken(tokenId, secret));
  const given = Buffer.from(signature);
  // timingSafeEqual needs equal lengths; comparing against itself keeps the time the same.
  return timingSafeEqual(expected, given.length === expected.length ? given : expected) && given.length === expected.length;
}

/** The link that completes a token through `tokenEndpoint`: `<publicUrl>/<id>?sig=<signature>`. */
export function waitTokenUrl(tokenId: string, links: WaitTokenLinkOptions): string {
  return `${links.publicUrl}/${encodeURIComponent(tokenId)}?sig=${signWaitToken(tokenId, links.secret)}`;
}
