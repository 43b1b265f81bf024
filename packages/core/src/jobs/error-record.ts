import type { ErrorRecord } from '../store/job-record.js';

const MAX_MESSAGE = 8_192;
const MAX_STACK = 16_384;

/** The message to store and report for `error`: never empty. */
function errorMessage(error: Error): string {
  const message = typeof error.message === 'string' && error.message.trim() !== '' ? error.message : `${error.name || 'Error'} thrown without a message`;
  return message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}…` : message;
}

/** The bounded record of one failed attempt kept in the job's error history. */
export function toErrorRecord(error: Error, attempt: number, at: Date): ErrorRecord {
  const record: ErrorRecord = { attempt, at, name: error.name || 'Error', message: errorMessage(error) };
  if (typeof error.stack === 'string') record.stack = error.stack.length > MAX_STACK ? error.stack.slice(0, MAX_STACK) : error.stack;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') record.code = code;
  return record;
}
