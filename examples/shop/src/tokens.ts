/**
 * Injection tokens for what is not a class of ours: the database, the clock, the logger, the
 * config. Classes (services, repositories, jobs) are their own tokens.
 */
export const TOKENS = {
  Db: Symbol.for('shop.Db'),
  Clock: Symbol.for('shop.Clock'),
  Logger: Symbol.for('shop.Logger'),
  Config: Symbol.for('shop.Config'),
} as const;
