import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ManualClock, openTarget, type Target } from './target.js';

// Server-side time comes from the emulator's clock, so tests that move time see it everywhere.
describe('the emulator clock (the emulator itself, in every environment)', () => {
  const clock = new ManualClock(new Date('2030-05-01T12:00:00Z'));
  let t: Target;
  beforeAll(async () => {
    t = await openTarget({ clock, emulator: true });
  });
  afterAll(async () => {
    await t.close();
  });

  it('drives $currentDate, $$NOW in pipelines and pipeline updates', async () => {
    const c = t.db.collection('clock');
    await c.insertOne({ _id: 1 as never });
    await c.updateOne({ _id: 1 as never }, { $currentDate: { touched: true } });
    clock.advance(60_000);
    await c.updateOne({ _id: 1 as never }, [{ $set: { piped: '$$NOW' } }]);
    const [projected] = await c.aggregate([{ $project: { now: '$$NOW', touched: 1, piped: 1 } }]).toArray();
    expect(projected).toEqual({
      _id: 1,
      touched: new Date('2030-05-01T12:00:00Z'),
      piped: new Date('2030-05-01T12:01:00Z'),
      now: new Date('2030-05-01T12:01:00Z'),
    });
  });
});
