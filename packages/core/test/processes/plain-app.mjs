// An application without @opentelemetry/api (run under bench/hide-otel-api.mjs): runs one job
// with a step and a child job on MemoryStore and prints what it saw as one JSON line.
// argv[2]: the path of @loom/core's compiled index.js.
import 'reflect-metadata';
import { pathToFileURL } from 'node:url';

const { Loom, MemoryStore, Job, ConsoleLogger } = await import(pathToFileURL(process.argv[2]).href);

class Child {
  async run() {}
}
Job({ name: 'child' })(Child);

class Parent {
  async run(_payload, ctx) {
    await ctx.step('greet', () => 'hello');
    await ctx.progress(50);
    await ctx.enqueue(Child, {});
    return 'done';
  }
}
Job({ name: 'parent' })(Parent);

let apiImport = 'loaded';
try {
  await import('@opentelemetry/api');
} catch (error) {
  apiImport = error.code;
}
const store = new MemoryStore();
const loom = await Loom.create({ store, jobs: [Parent, Child], logger: new ConsoleLogger({ level: 'warn' }) });
let finished = 0;
const bothDone = new Promise((resolve) => loom.on('job:completed', () => ++finished === 2 && resolve()));
const progress = [];
loom.on('job:progress', (e) => progress.push(e.progress));
await loom.start();
const { id } = await loom.enqueue(Parent, {});
await bothDone;
await loom.stop();
const job = await store.getJob(id);
const children = await store.listJobs({ parentId: id });
console.log(
  JSON.stringify({
    apiImport,
    status: job.status,
    result: job.result,
    progress,
    trace: job.trace ?? null,
    children: children.map((c) => [c.status, c.trace ?? null]),
  }),
);
