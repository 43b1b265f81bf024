import type { CompiledSchedule } from './schedule-options.js';

/** `catchUp: 'all'` enqueues at most this many missed slots per tick (the newest ones). */
export const MAX_CATCH_UP_SLOTS = 100;

/**
 * `catchUp: 'none'` still fires the newest due slot when it is at most this late (ms), so a
 * scheduler that wakes a little after the fire time (a busy event loop, a tick just missed) does
 * not lose it.
 */
export const CATCH_UP_NONE_TOLERANCE_MS = 60_000;

/** The schedule state selection needs (a subset of `ScheduleRecord`). */
export interface ScheduleCursor {
  lastFireAt: Date | null;
  firstSeenAt: Date;
}

/** Due slots the catch-up policy chose not to fire: every slot in `(after, upTo]`. */
export interface MissedSlots {
  after: Date;
  upTo: Date;
  reason: 'catch-up-latest' | 'catch-up-all-limit' | 'catch-up-none';
}

/** What one tick should do for one schedule. */
export interface SlotSelection {
  /** Slots to enqueue, oldest first. */
  fire: Date[];
  /** The newest due slot, to store as `lastFireAt`; null when nothing is due. */
  advanceTo: Date | null;
  missed: MissedSlots | null;
}

/**
 * `catchUp: 'all'` with `overlap: 'skip'`: every slot must run and no two may overlap, so they run
 * one after another, oldest first. This keeps only the oldest chosen slot and advances to it; the
 * next one is chosen once that run has finished.
 */
export function oldestOnly(selection: SlotSelection): SlotSelection {
  const [oldest] = selection.fire;
  return oldest === undefined ? selection : { ...selection, fire: [oldest], advanceTo: oldest };
}

const NOTHING_DUE: SlotSelection = { fire: [], advanceTo: null, missed: null };

/**
 * Chooses the slots to fire at `now`. Due slots are the fire times in
 * `(lastFireAt ?? firstSeenAt, now]`; a clock behind `lastFireAt` has nothing due, so a slot never
 * fires twice when time moves backwards.
 */
export function selectSlots(schedule: CompiledSchedule, cursor: ScheduleCursor, now: Date): SlotSelection {
  const from = cursor.lastFireAt ?? cursor.firstSeenAt;
  if (now <= from) return NOTHING_DUE;
  const limit = schedule.catchUp === 'all' ? MAX_CATCH_UP_SLOTS + 1 : 2;
  // With one slot beyond what may fire, `slots[0]` is then the newest slot left unfired.
  const { slots } = schedule.fireTimes.latest(from, now, limit);
  const newest = slots.at(-1);
  if (newest === undefined) return NOTHING_DUE;

  const missedUpTo = (upTo: Date | undefined, reason: MissedSlots['reason']): MissedSlots | null => (upTo === undefined ? null : { after: from, upTo, reason });

  switch (schedule.catchUp) {
    case 'all': {
      const dropped = slots.length > MAX_CATCH_UP_SLOTS;
      return {
        fire: dropped ? slots.slice(1) : slots,
        advanceTo: newest,
        missed: dropped ? missedUpTo(slots[0], 'catch-up-all-limit') : null,
      };
    }
    case 'latest':
      return {
        fire: [newest],
        advanceTo: newest,
        missed: slots.length > 1 ? missedUpTo(slots[0], 'catch-up-latest') : null,
      };
    case 'none': {
      const onTime = now.getTime() - newest.getTime() <= CATCH_UP_NONE_TOLERANCE_MS;
      return {
        fire: onTime ? [newest] : [],
        advanceTo: newest,
        missed: onTime ? missedUpTo(slots.length > 1 ? slots[0] : undefined, 'catch-up-none') : missedUpTo(newest, 'catch-up-none'),
      };
    }
  }
}
