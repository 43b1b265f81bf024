// sandbox-container.ts: loaded by every sandbox thread
import 'reflect-metadata';
import { Container } from 'inversify';
import './render-pdf.js'; // every sandboxed @Job class must be imported from here

export default async function createContainer(): Promise<Container> {
  const container = new Container();
  // bind what the sandboxed jobs inject: built anew in each thread, nothing is shared with the engine's
  return container;
}
