import { Test } from '@nestjs/testing';
import { createTestLoom } from '@loom/testing';
import { Mailer, SendReceipt } from './module.js';

const fakeMailer: Mailer = { send: async () => {} };

const moduleRef = await Test.createTestingModule({ providers: [SendReceipt, { provide: Mailer, useValue: fakeMailer }] }).compile();
const t = await createTestLoom({ jobs: [SendReceipt], resolve: (jobClass) => moduleRef.get(jobClass) });
await t.enqueue(SendReceipt, { email: 'ada@example.com' });
await t.runUntilIdle();
