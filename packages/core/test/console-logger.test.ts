import 'reflect-metadata';
import { afterEach, describe, expect, it } from '@jest/globals';
import { ConsoleLogger, Job, LoomError, type ConsoleLoggerOptions } from '@loom/core';
import { createTestLoom } from '@loom/testing';

const AT = new Date('2026-01-01T12:00:03.120Z');

/** A logger writing into `lines`, at a fixed time, without colours unless asked. */
function capture(options: ConsoleLoggerOptions = {}): { logger: ConsoleLogger; lines: string[]; levels: string[] } {
  const lines: string[] = [];
  const levels: string[] = [];
  const logger = new ConsoleLogger({
    now: () => AT,
    color: false,
    ...options,
    write: (line, level) => {
      lines.push(line);
      levels.push(level);
    },
  });
  return { logger, lines, levels };
}

function boom(): LoomError {
  return new LoomError('STORE_ERROR', 'connection reset');
}

const saved = { LOOM_LOG: process.env.LOOM_LOG, LOOM_LOG_LEVEL: process.env.LOOM_LOG_LEVEL };
afterEach(() => {
  for (const [key, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
});

describe('ConsoleLogger, pretty', () => {
  it('writes one line per entry: time, level, message, the fields of the entry and of child loggers, the error without its stack', () => {
    const { logger, lines, levels } = capture({ format: 'pretty' });
    const child = logger.child({ jobId: 'j1', job: 'send-welcome' });
    child.debug({}, 'hidden below info');
    child.info({ attempt: 2, runAt: new Date('2026-01-01T12:00:13Z') }, 'retrying');
    child.warn({ err: boom(), note: 'two words' }, 'extending the lease failed');
    expect(lines).toEqual([
      '12:00:03.120 INFO  [loom] retrying jobId=j1 job=send-welcome attempt=2 runAt=2026-01-01T12:00:13.000Z',
      '12:00:03.120 WARN  [loom] extending the lease failed jobId=j1 job=send-welcome note="two words" err="LoomError: connection reset (STORE_ERROR)"',
    ]);
    expect(levels).toEqual(['info', 'warn']);
  });

  it('prints the stack for a dead letter, and for every error at level debug', () => {
    const quiet = capture({ format: 'pretty' });
    quiet.logger.error({ err: boom(), event: 'job:dead' }, 'moved to the dead letters');
    quiet.logger.error({ err: boom() }, 'claim failed');
    const [dead, other] = quiet.lines;
    expect(dead!.split('\n')[0]).toBe('12:00:03.120 ERROR [loom] moved to the dead letters event=job:dead err="LoomError: connection reset (STORE_ERROR)"');
    expect(dead!.split('\n').slice(1)).toEqual(expect.arrayContaining([expect.stringMatching(/^ {4}at .*boom/)]));
    expect(other).not.toContain('\n');

    const verbose = capture({ format: 'pretty', level: 'debug' });
    verbose.logger.warn({ err: boom() }, 'claim failed');
    expect(verbose.lines[0]!.split('\n').length).toBeGreaterThan(1);
  });

  it('colours the level only when asked (a TTY by default)', () => {
    const { logger, lines } = capture({ format: 'pretty', color: true });
    logger.error({}, 'bad');
    expect(lines[0]).toContain('\x1b[31mERROR');
    const plain = capture({ format: 'pretty' });
    plain.logger.error({}, 'bad');
    expect(plain.lines[0]).not.toContain('\x1b[');
  });

  it('survives fields that JSON cannot hold', () => {
    const { logger, lines } = capture({ format: 'pretty' });
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    logger.info({ cyclic, big: 10n }, 'odd fields');
    expect(lines).toEqual(['12:00:03.120 INFO  [loom] odd fields cyclic={"a":1,"self":"[Circular]"} big=10']);
  });

  it('prints nothing when silent', () => {
    const { logger, lines } = capture({ level: 'silent' });
    logger.error({ err: boom(), event: 'job:dead' }, 'nothing');
    expect(lines).toEqual([]);
  });
});

describe('ConsoleLogger, JSON (LOOM_LOG=json)', () => {
  it('writes one pino-shaped object per line: numeric level, time in ms, name, fields, err without stack, msg', () => {
    process.env.LOOM_LOG = 'json';
    const { logger, lines } = capture();
    logger.child({ jobId: 'j1' }).warn({ attempt: 2, err: boom() }, 'attempt 2 failed');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toEqual({
      level: 40,
      time: AT.getTime(),
      name: 'loom',
      jobId: 'j1',
      attempt: 2,
      err: { type: 'LoomError', message: 'connection reset', code: 'STORE_ERROR' },
      msg: 'attempt 2 failed',
    });
  });

  it('keeps the stack of a dead letter inside its one line', () => {
    const { logger, lines } = capture({ format: 'json' });
    logger.error({ err: boom(), event: 'job:dead' }, 'moved to the dead letters');
    expect(lines[0]).not.toContain('\n');
    expect((JSON.parse(lines[0]!) as { err: { stack: string } }).err.stack).toMatch(/^LoomError: connection reset\n\s+at /);
  });

  it('takes its level from LOOM_LOG_LEVEL', () => {
    process.env.LOOM_LOG_LEVEL = 'warn';
    const { logger, lines } = capture({ format: 'json' });
    logger.info({}, 'dropped');
    logger.warn({}, 'kept');
    expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(['kept']);
  });
});

@Job({ name: 'always-fails', retries: 1, backoff: { type: 'fixed', delay: '1s' } })
class AlwaysFails {
  async run(): Promise<void> {
    throw new Error('SMTP timeout');
  }
}

describe('ConsoleLogger as the engine logger', () => {
  it('logs a retry as one line without a stack, and the dead letter with its stack', async () => {
    const { logger, lines } = capture({ format: 'pretty' });
    const t = await createTestLoom({ jobs: [AlwaysFails], logger });
    const { id } = await t.enqueue(AlwaysFails);
    await t.runUntilIdle();
    await t.advance('1s');
    expect((await t.getJob(id))?.status).toBe('dead');
    const retry = lines.find((l) => l.includes('retrying in'));
    const dead = lines.find((l) => l.includes('moved to the dead letters'));
    expect(retry).toMatch(new RegExp(`^12:00:03.120 WARN  \\[loom\\] Job ${id}: attempt 1 of 2 failed .* err="Error: SMTP timeout"$`));
    expect(dead!.split('\n')[0]).toContain('event=job:dead err="Error: SMTP timeout"');
    expect(dead!.split('\n').length).toBeGreaterThan(1);
    expect(lines.filter((l) => l.includes('\n'))).toEqual([dead]);
    await t.stop();
  });
});
