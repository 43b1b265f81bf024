/**
 * Runs `tasks` with at most `width` in flight, each starting when one before it ends; resolves
 * with every outcome in the tasks' order (as `Promise.allSettled`), never rejects.
 */
export async function settledAtMost<T>(width: number, tasks: readonly (() => Promise<T>)[]): Promise<PromiseSettledResult<T>[]> {
  const outcomes = new Array<PromiseSettledResult<T>>(tasks.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < tasks.length) {
      const i = next++;
      try {
        outcomes[i] = { status: 'fulfilled', value: await tasks[i]!() };
      } catch (reason) {
        outcomes[i] = { status: 'rejected', reason };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, tasks.length) }, lane));
  return outcomes;
}
