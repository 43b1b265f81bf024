import { Container } from 'inversify';
import './sandbox-jobs.js';

/** The sandbox module of the sandbox scenario: each thread builds its job classes with this container. */
export default function createContainer(): Promise<Container> {
  return Promise.resolve(new Container());
}
