import { inject, injectable } from 'inversify';
import { notFound } from '../http/http-error.js';
import type { RouteReply, RouteRequest } from '../http/router.js';
import { JobQueue } from '../infra/job-queue.js';

/** `GET /jobs/:id`, `GET /stats`, `GET /dead-letters`, `POST /dead-letters/:id/retry`. */
@injectable()
export class JobsController {
  constructor(@inject(JobQueue) private readonly queue: JobQueue) {}

  async get(req: RouteRequest): Promise<RouteReply> {
    const job = await this.queue.loom.getJob(req.params.id!);
    if (!job) throw notFound(`Job ${req.params.id}`);
    const { lease: _lease, ...visible } = job;
    return { status: 200, body: visible };
  }

  async stats(): Promise<RouteReply> {
    return { status: 200, body: await this.queue.loom.stats() };
  }

  async deadLetters(): Promise<RouteReply> {
    const letters = await this.queue.loom.deadLetters.list({ limit: 100 });
    return {
      status: 200,
      body: letters.map((d) => ({ id: d.id, name: d.job.name, reason: d.reason, diedAt: d.diedAt, attempts: d.job.attempt, payload: d.job.payload })),
    };
  }

  /** Puts the dead job back in its queue (same id, attempts reset): 202, or 404 if it is no longer dead. */
  async retry(req: RouteRequest): Promise<RouteReply> {
    const jobId = await this.queue.loom.deadLetters.retry(req.params.id!);
    if (jobId === null) throw notFound(`Dead letter ${req.params.id}`);
    return { status: 202, body: { jobId } };
  }
}
