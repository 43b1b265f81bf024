import { LoomError } from '../support/errors.js';

/** `loom.schedules.pause/resume` named a schedule this engine does not know. */
export class ScheduleNotFoundError extends LoomError {
  constructor(readonly scheduleName: string, known: readonly string[]) {
    super(
      'SCHEDULE_NOT_FOUND',
      `No schedule named "${scheduleName}" in this engine; known schedules: ${known.length > 0 ? known.join(', ') : '(none)'}. ` +
        'A schedule is named after its job (the @Job name option, or the class name).',
    );
  }
}
