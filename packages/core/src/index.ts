/**
 * `@loom/core`: durable background jobs for TypeScript.
 *
 * ```ts
 * import 'reflect-metadata';
 * import { Container } from 'inversify';
 * import { Job, Loom, MemoryStore } from '@loom/core';
 *
 * @Job({ retries: 3 })
 * class Hello { async run(payload: { name: string }) { console.log(`hello ${payload.name}`); } }
 *
 * const loom = await Loom.create({ container: new Container(), store: new MemoryStore() });
 * await loom.start();
 * await loom.enqueue(Hello, { name: 'world' });
 * ```
 *
 * @packageDocumentation
 */
export * from './duration.js';
export * from './clock.js';
export * from './errors.js';
export * from './job-record.js';
export * from './store.js';
export * from './memory-store.js';
