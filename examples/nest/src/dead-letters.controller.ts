import { Controller, Get, HttpCode, NotFoundException, Param, Post } from '@nestjs/common';
import { Loom } from '@loom/core';
import { InjectLoom } from '@loom/nestjs';

/** The jobs that ran out of attempts, and a way to put one back in its queue. */
@Controller('dead-letters')
export class DeadLettersController {
  constructor(@InjectLoom() private readonly loom: Loom) {}

  @Get()
  async list() {
    const letters = await this.loom.deadLetters.list({ limit: 100 });
    return letters.map((d) => ({ id: d.id, name: d.job.name, reason: d.reason, diedAt: d.diedAt, attempts: d.job.attempt, payload: d.job.payload }));
  }

  /** Same job id, attempts reset: 202, or 404 when it is no longer dead. */
  @Post(':id/retry')
  @HttpCode(202)
  async retry(@Param('id') id: string): Promise<{ jobId: string }> {
    const jobId = await this.loom.deadLetters.retry(id);
    if (jobId === null) throw new NotFoundException(`Dead letter ${id} not found`);
    return { jobId };
  }
}
