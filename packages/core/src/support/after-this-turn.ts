/**
 * `fn` run once at the end of this turn of the event loop (`setImmediate`), however often the
 * returned function is called during the turn: work that many callbacks of one turn ask for (the
 * runs of one claim ending together) is done once for all of them. No timer, no clock time.
 */
export function onceAfterThisTurn(fn: () => void): () => void {
  let due = false;
  return () => {
    if (due) return;
    due = true;
    setImmediate(() => {
      due = false;
      fn();
    });
  };
}

/**
 * Resolves at the end of this turn of the event loop (`setImmediate`): every promise callback
 * already queued, and every one those queue in turn, has run by then. No timer, no clock time.
 */
export function afterThisTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
