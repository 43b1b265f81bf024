import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { Loom } from '@loom/core';
import { InjectLoom } from '@loom/nestjs';

/** Logs each completed job through Nest's logger (Loom itself logs failures and dead letters). */
@Injectable()
export class JobLog implements OnModuleInit {
  private readonly logger = new Logger('Jobs');

  constructor(@InjectLoom() private readonly loom: Loom) {}

  onModuleInit(): void {
    this.loom.on('job:completed', ({ job, durationMs }) => this.logger.log(`${job.name} ${job.id} completed on attempt ${job.attempt} (${durationMs} ms)`));
  }
}
