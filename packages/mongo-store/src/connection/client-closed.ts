import { MongoNotConnectedError } from 'mongodb';

/**
 * Whether `err` says the store's MongoClient was closed by the application (`client.close()`): the
 * driver then refuses every operation until `connect()` is called again, so a background write
 * retried later would fail the same way, and log into whatever the process runs next, for as long
 * as it lives.
 */
export function isClientClosedError(err: unknown): boolean {
  return err instanceof MongoNotConnectedError;
}

/** The one warning a background writer gives when it stops because its client was closed first. */
export function clientClosedWarning(what: string): string {
  return (
    `writing ${what} failed: the store's MongoClient was closed before the store, so what was pending is lost and nothing more is written in the background; ` +
    'close the store (store.close(), after loom.stop(): stopping the engine leaves its store open) before closing the client'
  );
}
