import 'reflect-metadata';
import { Container } from 'inversify';
import './jobs/render-invoice.js';

/**
 * The shop's sandbox module (`Loom.create({ sandbox: { module } })`): each sandbox thread loads it
 * and calls its default export to build the container of the sandboxed job classes. A container and
 * its instances cannot cross threads, so this one is built anew in every thread; importing the job
 * modules above is what makes the thread know their classes. Bind here what those jobs inject.
 */
export default function createContainer(): Promise<Container> {
  return Promise.resolve(new Container());
}
