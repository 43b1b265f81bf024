import { Container } from 'inversify';
import './jobs.js';

/**
 * The sandbox module of the sandbox scenarios: what `Loom.create({ sandbox: { module } })` names. A
 * thread loads it and calls its default export to build the job classes' container; importing
 * ./jobs.js is what makes the thread know the classes.
 */
export default function createContainer(): Promise<Container> {
  return Promise.resolve(new Container());
}
