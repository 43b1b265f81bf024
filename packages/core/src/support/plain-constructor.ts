/**
 * Why objects made once per job on the hot path come from constructors (classes, or this helper),
 * not object literals: V8 watches each object literal's allocations and, if at one young-generation
 * collection nearly every object the literal made since the previous one is still alive, allocates
 * all its later objects in the old generation ("pretenuring"), for the life of the process. Objects
 * that live as long as their run are often all alive at one collection (the first ones after a
 * start). Once a literal that points to a run's other objects is pretenured, each of its objects
 * keeps those alive through every young collection until the next full one: on the 100,000-job
 * MemoryStore bench such runs took 20-25 µs of CPU per job instead of 9-12, and 100-150 MB more
 * memory (bench/README.md, "Issue 33 items 2/3: pretenuring, one map of jobs (7 December)" and
 * "one object per run (7 December)"). V8 never pretenures what a constructor makes.
 *
 * `plainConstructor(init)` makes such a constructor whose objects are plain objects all the same:
 * their prototype is `Object.prototype`, so `clonePlain`, `toStrictEqual` and users' plain-object
 * checks see no difference from a literal. For objects nobody outside the engine sees, a class is
 * the plainer way.
 */
export const plainConstructor = <A extends unknown[], T>(init: (this: T, ...args: A) => void): new (...args: A) => T => {
  init.prototype = Object.prototype;
  return init as unknown as new (...args: A) => T;
};
