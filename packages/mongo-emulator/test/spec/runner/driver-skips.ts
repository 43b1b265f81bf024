/**
 * Spec tests the Node driver does not pass against any server: those its own unified runner
 * skips (node-mongodb-native test/integration/{crud,transactions,transactions-convenient-api}/
 * *.spec.test.ts, with the driver ticket that tracks each), and those it passes only because
 * that runner matches nested documents more loosely than the format specifies.
 */
const SKIPS: Record<string, Record<string, string>> = {
  crud: {
    'inserting _id with type null via clientBulkWrite': 'NODE-6468',
    'inserting _id with type null via insertOne': 'NODE-6468',
    'inserting _id with type null via insertMany': 'NODE-6468',
    'inserting _id with type null via bulkWrite': 'NODE-6468',
    'partialResult is unset when all operations fail during an unordered bulk write': 'NODE-6384',
    'partialResult is unset when first operation fails during an ordered bulk write (summary)': 'NODE-6384',
    'partialResult is unset when first operation fails during an ordered bulk write (verbose)': 'NODE-6384',
    'InsertMany passes bypassDocumentValidation: false': 'NODE-6484',
    'FindOneAndUpdate passes bypassDocumentValidation: false': 'NODE-6484',
    'FindOneAndReplace passes bypassDocumentValidation: false': 'NODE-6484',
    'BulkWrite passes bypassDocumentValidation: false': 'NODE-6484',
    'Aggregate with $out passes bypassDocumentValidation: false': 'NODE-6484',
  },
  transactions: {
    'readConcern local in defaultTransactionOptions': 'NODE-5924',
    'defaultTransactionOptions override client options': 'NODE-5924',
    'transaction options inherited from defaultTransactionOptions': 'NODE-5924',
    'transaction options inherited from client': 'NODE-5924',
    'causal consistency disabled': 'NODE-5924',
    'client bulkWrite with writeConcern in a transaction causes a transaction error': 'NODE-5924',
  },
  'retryable-writes': {
    // The driver reports the _id of an insert that was never committed in the error's
    // insertedIds; its own runner matches nested documents loosely and so does not notice.
    'First insertOne is never committed': 'its insertedIds lists uncommitted inserts',
  },
  'transactions-convenient-api': {
    'callback succeeds after multiple connection errors': 'NODE-5855',
    'callback is not retried after non-transient error (DuplicateKeyError)': 'NODE-5855',
    'withTransaction succeeds if callback aborts': 'NODE-5855',
  },
};

/** The reason the Node driver skips this test, if it does. */
export function driverSkip(suite: string, description: string): string | undefined {
  const ticket = SKIPS[suite]?.[description];
  if (!ticket) return undefined;
  return /^NODE-/.test(ticket) ? `the Node driver skips it: ${ticket}` : `the Node driver does not pass it: ${ticket}`;
}
