/** The emulator's notion of time (TTL expiry, $currentDate, change event wall times). */
export interface EmulatorClock {
  now(): Date;
}

export const systemClock: EmulatorClock = { now: () => new Date() };
