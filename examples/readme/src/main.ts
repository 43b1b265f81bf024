import 'reflect-metadata';
import { Container } from 'inversify';
import { Loom, MemoryStore } from '@loom/core';
import { ConsoleMailer, Mailer } from './mailer.js';
import { SendWelcome } from './send-welcome.js';

const container = new Container();
container.bind(Mailer).to(ConsoleMailer);

const loom = await Loom.create({ container, store: new MemoryStore(), jobs: [SendWelcome] });
await loom.start();
await loom.enqueue(SendWelcome, { userId: 'u1', email: 'ada@example.com' });
