/**
 * `@loom/dashboard`: a web UI for Loom's queues, jobs, dead letters and schedules, as one
 * `(req, res)` handler that mounts in node:http, Express, Fastify (with `@fastify/middie`) and
 * NestJS. Server-rendered HTML, a small script and a stylesheet shipped in the package; live
 * updates through server-sent events; every action a POST with a CSRF token, allowed only by
 * `authorize(req)`.
 *
 * @packageDocumentation
 */
export { loomDashboard, type LoomDashboard } from './dashboard.js';
export type { DashboardOptions } from './options.js';
export { CONTENT_SECURITY_POLICY } from './http/security-headers.js';
export { tokenEndpoint, type TokenEndpointOptions } from './token-endpoint.js';
