import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { ConsoleLogger } from '@loom/core';

afterEach(() => {
  jest.restoreAllMocks();
});

describe('ConsoleLogger', () => {
  it('prints entries at or above its level with the bindings of child loggers', () => {
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => {});
    const log = jest.spyOn(console, 'log').mockImplementation(() => {});
    const error = jest.spyOn(console, 'error').mockImplementation(() => {});
    const logger = new ConsoleLogger({ level: 'info' }).child({ jobId: 'j1' });
    logger.debug({}, 'hidden');
    logger.info({ n: 1 }, 'shown');
    const err = new Error('boom');
    logger.warn({ err }, 'careful');
    logger.error({}, 'bad');
    expect(log).toHaveBeenCalledWith('[loom] INFO shown', { jobId: 'j1', n: 1 });
    expect(warn).toHaveBeenCalledWith('[loom] WARN careful', { jobId: 'j1' }, err.stack);
    expect(error).toHaveBeenCalledWith('[loom] ERROR bad', { jobId: 'j1' });
    expect(log).toHaveBeenCalledTimes(1);
  });

  it('prints nothing when silent', () => {
    const error = jest.spyOn(console, 'error').mockImplementation(() => {});
    new ConsoleLogger({ level: 'silent' }).error({}, 'nothing');
    expect(error).not.toHaveBeenCalled();
  });
});
