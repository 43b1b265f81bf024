import { describe, expect, it } from '@jest/globals';
import * as errors from '../src/errors.js';

// Each error class of the CLI's one error module has a code of its own, so a caller (or a test)
// tells failures apart by `code` rather than by class identity.
describe('the CLI errors', () => {
  // Every export of the module is an error class taking a message.
  const classes = Object.values(errors) as (new (message: string) => Error & { code: string })[];

  it('each carry a stable code, distinct from every other class', () => {
    const codes = classes.map((C) => new C('m').code);
    expect(codes).toEqual(['CLI_REFUSED', 'CLI_UNREACHABLE', 'CLI_USAGE']);
    expect(new Set(codes).size).toBe(classes.length);
  });
});
