import { Module } from '@nestjs/common';
import { Mailer } from './mailer.service.js';
import { SendWelcome } from './send-welcome.job.js';
import { SignupsController } from './signups.controller.js';

/** A feature module: its job is an ordinary provider, found by LoomModule. */
@Module({
  controllers: [SignupsController],
  providers: [Mailer, SendWelcome],
})
export class SignupsModule {}
