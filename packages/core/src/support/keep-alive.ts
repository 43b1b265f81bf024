/**
 * Keeps the Node process alive while an engine runs. The system clock's timers are unref'd (a
 * pending retry must not hold a finished script open), so without this a worker-only process
 * with nothing else on its event loop would exit right after `loom.start()`.
 */
export function holdProcessOpen(): () => void {
  const handle = setInterval(() => {}, 2 ** 31 - 1);
  return () => clearInterval(handle);
}
