import { describe, expect, test } from '@jest/globals';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { formValues, readForm } from '../src/http/form-body.js';

// The fields a form may repeat (a bulk action's ticked ids, a filter's statuses) keep every value;
// any other repeated field keeps its first, from a raw body as from one a framework parsed.
describe('readForm', () => {
  test('keeps every value of id and status from a raw body, the first of other fields', async () => {
    const req = Readable.from([Buffer.from('id=a&id=b&status=dead&status=queued&action=cancel&action=remove')]) as unknown as IncomingMessage;
    const form = await readForm(req);
    expect(formValues(form, 'id')).toEqual(['a', 'b']);
    expect(formValues(form, 'status')).toEqual(['dead', 'queued']);
    expect(form.get('action')).toBe('cancel');
  });

  test('takes arrays of strings for id and status from a parsed body, dropping other arrays and objects', async () => {
    const req = {
      readableEnded: true,
      body: { id: ['a', 'b', { $ne: 1 }], status: 'dead', action: ['cancel'], name: { $ne: null } },
    } as unknown as IncomingMessage;
    const form = await readForm(req);
    expect(formValues(form, 'id')).toEqual(['a', 'b']);
    expect(formValues(form, 'status')).toEqual(['dead']);
    expect(form.has('action')).toBe(false);
    expect(form.has('name')).toBe(false);
  });
});
