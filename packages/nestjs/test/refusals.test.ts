import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Injectable, Module, Scope, type ModuleMetadata } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Container } from 'inversify';
import { Job, LoomError, MemoryStore } from '@loom/core';
import { LoomModule, type LoomModuleOptions } from '@loom/nestjs';
import { CaptureLogger, FakeClock } from '@loom/testing';

@Injectable({ scope: Scope.REQUEST })
class RequestScopedJob {
  async run(): Promise<void> {}
}
Job({ name: 'request-scoped' })(RequestScopedJob);

@Injectable({ scope: Scope.REQUEST })
class CurrentUser {
  readonly id = 'u1';
}

@Injectable()
@Job({ name: 'uses-current-user' })
class UsesCurrentUser {
  constructor(private readonly user: CurrentUser) {}
  async run(): Promise<string> {
    return this.user.id;
  }
}

@Injectable()
@Job({ name: 'everywhere' })
class Everywhere {
  async run(): Promise<void> {}
}

@Module({ providers: [Everywhere] })
class BillingModule {}

@Module({ providers: [Everywhere] })
class ShippingModule {}

@Job({ name: 'not-provided' })
class NotProvided {
  async run(): Promise<void> {}
}

const options = (extra: Partial<LoomModuleOptions> = {}): LoomModuleOptions => ({
  store: new MemoryStore(),
  clock: new FakeClock(),
  logger: new CaptureLogger(),
  ...extra,
});

/** The error a Nest testing module with this metadata fails with, at compile or at init. */
async function startupError(metadata: ModuleMetadata): Promise<LoomError> {
  try {
    const moduleRef = await Test.createTestingModule(metadata).compile();
    await moduleRef.init();
    await moduleRef.close();
  } catch (err) {
    if (LoomError.is(err)) return err;
    throw err;
  }
  throw new Error('the module started');
}

describe('LoomModule refuses what it cannot run', () => {
  it('refuses a request-scoped job provider, naming the class and what to do', async () => {
    const err = await startupError({ imports: [LoomModule.forRoot(options())], providers: [RequestScopedJob] });
    expect(err.code).toBe('INVALID_JOB_CLASS');
    expect(err.message).toMatch(/^Job class RequestScopedJob \(provided by RootTestModule\) is request-scoped; .* make it default-scoped/);
  });

  it('refuses a job made request-scoped by a dependency', async () => {
    const err = await startupError({ imports: [LoomModule.forRoot(options())], providers: [UsesCurrentUser, CurrentUser] });
    expect(err.message).toMatch(
      /^Job class UsesCurrentUser \(provided by RootTestModule\) depends on a request-scoped provider, which makes it request-scoped/,
    );
  });

  it('refuses a job class provided by two modules, naming both', async () => {
    const err = await startupError({ imports: [LoomModule.forRoot(options()), BillingModule, ShippingModule] });
    expect(err.message).toMatch(/^Job class Everywhere is provided by two modules, BillingModule and ShippingModule; .*provide it in one module/);
  });

  it('refuses a class in `jobs` that no module provides', async () => {
    const err = await startupError({ imports: [LoomModule.forRoot(options({ jobs: [NotProvided] }))] });
    expect(err.message).toBe("Job class NotProvided is listed in LoomModule's `jobs` but no module provides it: add it to the `providers` of a module");
  });

  it('refuses `container` or `resolve` in its options: Nest builds the jobs', async () => {
    for (const extra of [{ container: new Container() }, { resolve: () => new Everywhere() }]) {
      const err = await startupError({ imports: [LoomModule.forRoot(options(extra as Partial<LoomModuleOptions>))] });
      expect(err.code).toBe('INVALID_ARGUMENT');
      expect(err.message).toMatch(/LoomModule option "(container|resolve)": is not used: LoomModule builds @Job classes through Nest/);
    }
  });

  it('refuses forRootAsync without a factory', () => {
    expect(() => LoomModule.forRootAsync({} as never)).toThrow(/LoomModule.forRootAsync options: need useFactory/);
  });
});
