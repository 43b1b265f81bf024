/**
 * Jest glue: one `describe` per spec file, one `it` per test. A test is skipped only for the
 * reasons the format gives (skipReason, runOnRequirements: the emulator claims MongoDB 7.0 as a
 * one-member replica set) or because the Node driver itself does not pass it (its own runner
 * skips it too). A test listed in the refusal table must fail, and the emulator must have
 * answered with the refusal's error code while it ran: refusals stay loud and the table honest.
 */
import { describe, expect, it } from '@jest/globals';
import { loadSuite, requirementsUnmet, runTest, schemaUnsupported, type ServerInfo, type TestRecord } from './runner.js';
import { findRefusal, type Refusal } from '../refusals.js';
import { driverSkip } from './driver-skips.js';

/** What the emulator claims to be (with MONGODB_URI: SPEC_SERVER_VERSION, default 7.0.0, as a replica set). */
export const CLAIMED: ServerInfo = {
  version: (process.env.SPEC_SERVER_VERSION ?? '7.0.0').split('.').map(Number),
  topology: 'replicaset',
};

export type Verdict = { kind: 'run' } | { kind: 'skip'; reason: string } | { kind: 'refused'; refusal: Refusal };

export function verdict(suite: string, file: ReturnType<typeof loadSuite>[number], test: ReturnType<typeof loadSuite>[number]['tests'][number]): Verdict {
  const schema = schemaUnsupported(file);
  if (schema) return { kind: 'skip', reason: schema };
  if (test.skipReason) return { kind: 'skip', reason: `skipReason: ${test.skipReason}` };
  const unmet = requirementsUnmet(file.runOnRequirements, CLAIMED) ?? requirementsUnmet(test.runOnRequirements, CLAIMED);
  if (unmet) return { kind: 'skip', reason: unmet };
  const driver = driverSkip(suite, test.description);
  if (driver) return { kind: 'skip', reason: driver };
  const refusal = process.env.MONGODB_URI ? undefined : findRefusal(suite, file.name, test.description);
  if (refusal) return { kind: 'refused', refusal };
  return { kind: 'run' };
}

export function describeSuite(suite: string): void {
  const files = loadSuite(suite);
  describe(`MongoDB spec tests: ${suite}`, () => {
    for (const file of files) {
      describe(file.name, () => {
        for (const test of file.tests) {
          const v = verdict(suite, file, test);
          if (v.kind === 'skip') {
            it.skip(`${test.description} (${v.reason})`, () => undefined);
          } else if (v.kind === 'refused') {
            it(`${test.description} [refused: ${v.refusal.feature}]`, async () => {
              const record: TestRecord = { serverErrorCodes: new Set() };
              const outcome = await runTest(file, test, record).then(
                () => 'passed',
                () => 'failed',
              );
              expect({ outcome, codeSeen: record.serverErrorCodes.has(v.refusal.code) }).toEqual({ outcome: 'failed', codeSeen: true });
            });
          } else {
            it(test.description, async () => {
              await runTest(file, test);
            });
          }
        }
      });
    }
  });
}
