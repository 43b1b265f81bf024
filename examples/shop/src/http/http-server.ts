import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { z } from 'zod';
import { LoomError, type Logger } from '@loom/core';
import { HttpError } from './http-error.js';
import type { Router } from './router.js';

const MAX_BODY_BYTES = 1024 * 1024;
const CLIENT_ERRORS = new Set(['INVALID_PAYLOAD', 'INVALID_ARGUMENT', 'INVALID_IDEMPOTENCY_KEY', 'NOT_PLAIN_DATA']);

/** A handler that answers the requests it owns and passes the others on (the Loom dashboard under `/loom`). */
export type MountedHandler = (req: IncomingMessage, res: ServerResponse, next: () => void) => void;

const tracer = trace.getTracer('loom-shop');

/**
 * A node:http server that routes JSON requests through `router` and answers errors as JSON.
 * `mounted` (the dashboard) sees each request first and hands back the ones outside its path.
 * Each API request is a server span (continuing an incoming `traceparent`), active while the
 * handler runs: the jobs it enqueues are part of its trace. Without an OpenTelemetry SDK
 * registered these are no-ops.
 */
export function createHttpServer(router: Router, logger: Logger, mounted?: MountedHandler): Server {
  return createServer((req, res) => {
    if (mounted) mounted(req, res, () => api(router, logger, req, res));
    else api(router, logger, req, res);
  });
}

function api(router: Router, logger: Logger, req: IncomingMessage, res: ServerResponse): void {
  const parent = propagation.extract(ROOT_CONTEXT, req.headers);
  const span = tracer.startSpan(req.method ?? 'GET', { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method ?? 'GET' } }, parent);
  context
    .with(trace.setSpan(parent, span), () => handle(router, req, res, span))
    .catch((err: unknown) => {
      const reply = errorReply(err);
      if (reply.status >= 500) logger.error({ err, method: req.method, url: req.url }, `${req.method} ${req.url} failed`);
      send(res, reply.status, reply.body);
    })
    .finally(() => {
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
}

async function handle(router: Router, req: IncomingMessage, res: ServerResponse, span: Span): Promise<void> {
  const { pathname } = new URL(req.url ?? '/', 'http://localhost');
  span.setAttribute('url.path', pathname);
  const match = router.match(req.method ?? 'GET', pathname);
  if (match === undefined) throw new HttpError(404, 'NOT_FOUND', `No route for ${req.method} ${pathname}`);
  if (match === 'method-not-allowed') throw new HttpError(405, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${pathname}`);
  span.updateName(`${req.method} ${match.route}`);
  span.setAttribute('http.route', match.route);
  const body = await readJson(req);
  const reply = await match.handler({ params: match.params, body });
  send(res, reply.status, reply.body);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, 'BODY_TOO_LARGE', `The body is over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  if (size === 0) return undefined;
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    throw new HttpError(400, 'INVALID_JSON', 'The body is not valid JSON');
  }
}

function errorReply(err: unknown): { status: number; body: unknown } {
  if (err instanceof HttpError) return { status: err.status, body: { error: { code: err.code, message: err.message, details: err.details } } };
  if (err instanceof z.ZodError) {
    const details = err.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message }));
    return { status: 400, body: { error: { code: 'VALIDATION', message: z.prettifyError(err), details } } };
  }
  if (LoomError.is(err) && CLIENT_ERRORS.has(err.code)) return { status: 400, body: { error: { code: err.code, message: err.message } } };
  return { status: 500, body: { error: { code: 'INTERNAL', message: 'Internal error; see the server log' } } };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
}
