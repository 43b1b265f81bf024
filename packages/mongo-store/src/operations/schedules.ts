import type { Collection } from 'mongodb';
import type { ScheduleDescription, ScheduleRecord } from '@loom/core';
import { requireDate, requireDates, requireNumber, requireString } from '../arguments.js';
import type { ScheduleDocument } from '../schema/documents.js';
import { scheduleCasFilter } from '../schema/filters.js';
import { toScheduleRecord } from '../schema/records.js';
import { isDuplicateKey, StoreArgumentError } from '../store-errors.js';

/** Cron state, one document per schedule (`_id` = job name); fires advance by compare-and-set. */
export class ScheduleRepository {
  constructor(private readonly schedules: Collection<ScheduleDocument>) {}

  async ensure(name: string, now: Date): Promise<ScheduleRecord> {
    const _id = requireString(name, 'schedule name');
    requireDate(now, 'now');
    const upsert = () =>
      this.schedules.findOneAndUpdate(
        { _id },
        { $setOnInsert: { lastFireAt: null, firstSeenAt: now, firing: [], paused: false, updatedAt: now } },
        { upsert: true, returnDocument: 'after' },
      );
    let doc: ScheduleDocument | null;
    try {
      doc = await upsert();
    } catch (err) {
      // Two schedulers inserting the same new schedule: the loser reads the winner's document.
      if (!isDuplicateKey(err)) throw err;
      doc = await this.schedules.findOne({ _id });
    }
    return toScheduleRecord(doc!);
  }

  async describe(name: string, description: ScheduleDescription, now: Date): Promise<void> {
    const _id = requireString(name, 'schedule name');
    requireDate(now, 'now');
    if (typeof description !== 'object' || description === null || typeof description.job !== 'object' || description.job === null) {
      throw new StoreArgumentError('schedule description must be { cron, timezone, job: { queue, payload, priority, maxAttempts } }');
    }
    const stored: ScheduleDescription = {
      cron: requireString(description.cron, 'schedule cron'),
      timezone: requireString(description.timezone, 'schedule timezone'),
      job: {
        queue: requireString(description.job.queue, 'schedule job queue'),
        payload: description.job.payload,
        priority: requireNumber(description.job.priority, 'schedule job priority', true),
        maxAttempts: requireNumber(description.job.maxAttempts, 'schedule job maxAttempts', true),
      },
    };
    const write = () =>
      this.schedules.updateOne(
        { _id },
        { $set: { description: stored, updatedAt: now }, $setOnInsert: { lastFireAt: null, firstSeenAt: now, firing: [], paused: false } },
        { upsert: true },
      );
    try {
      await write();
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      await write();
    }
  }

  async advance(name: string, expected: Date | null, next: Date, now: Date, fire?: Date[]): Promise<boolean> {
    const set: Partial<ScheduleDocument> = { lastFireAt: requireDate(next, 'next fire time'), updatedAt: requireDate(now, 'now') };
    if (fire !== undefined) set.firing = requireDates(fire, 'fire times');
    const res = await this.schedules.updateOne(scheduleCasFilter(name, expected), { $set: set });
    return res.modifiedCount === 1;
  }

  async markFired(name: string, firedUpTo: Date, now: Date): Promise<boolean> {
    const res = await this.schedules.updateOne(scheduleCasFilter(name, requireDate(firedUpTo, 'fired up to')), {
      $set: { firing: [], updatedAt: requireDate(now, 'now') },
    });
    return res.matchedCount === 1;
  }

  async setPaused(name: string, paused: boolean, now: Date): Promise<boolean> {
    if (typeof paused !== 'boolean') requireString(paused, 'paused (a boolean)');
    const res = await this.schedules.updateOne({ _id: requireString(name, 'schedule name') }, { $set: { paused, updatedAt: requireDate(now, 'now') } });
    return res.matchedCount === 1;
  }

  async list(): Promise<ScheduleRecord[]> {
    return (await this.schedules.find({}, { sort: { _id: 1 } }).toArray()).map(toScheduleRecord);
  }
}
