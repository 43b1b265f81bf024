import { describe, expect, it } from '@jest/globals';
import { BodyTooLargeError, PageError } from '../src/errors.js';

// Each error class of the dashboard's one error module has a code of its own.
describe('the dashboard errors', () => {
  it('each carry a stable code, distinct from every other class', () => {
    const codes = [new BodyTooLargeError('too large').code, new PageError(404, 'Not found', 'gone').code];
    expect(codes).toEqual(['DASHBOARD_BODY_TOO_LARGE', 'DASHBOARD_PAGE']);
    expect(new Set(codes).size).toBe(codes.length);
  });
});
