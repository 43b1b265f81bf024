import 'reflect-metadata';
import { describeWorkflowScenarios } from '@loom/testing/jest';
import { useMongoFixture } from './fixture.js';

// The workflow scenarios on a standalone MongoDB (no transactions, no change streams): dead-letter
// moves take the two-step path there, and workers learn about woken jobs only from their own engine.
const standalone = useMongoFixture({ topology: 'standalone' });
describeWorkflowScenarios('MongoStore (standalone)', () => ({ store: standalone.newStore({ retention: { completed: false } }) }));
