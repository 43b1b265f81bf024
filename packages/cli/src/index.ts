/**
 * `@loom/cli`: the `loom` command. It reads and steers a Loom MongoDB store directly (no job
 * classes needed), with the same operations as `loom.jobs`, `loom.queues`, `loom.deadLetters` and
 * `loom.schedules`:
 *
 * ```sh
 * export MONGODB_URI=mongodb://127.0.0.1:27017/?replicaSet=rs0 LOOM_DATABASE=app
 * loom jobs ls --status dead,queued --name send-receipt
 * loom jobs cancel 665f1c2e9b1e8a3d4c5b6a79 --reason "customer asked"
 * loom queues pause emails
 * loom dlq retry --all --name send-receipt
 * ```
 *
 * `runLoom(argv, io)` runs one command line in-process and resolves with its exit code.
 *
 * @packageDocumentation
 */
export { runLoom, EXIT, type LoomIo } from './cli.js';
export { USAGE } from './usage.js';
export { redactUri } from './connection.js';
