import 'reflect-metadata';
import { MemoryStore } from '@loom/core';
import { describeFlowChaos } from '@loom/testing/jest';

// Flows under engine deaths (issue 31): a DAG of 1,000 nodes and 20 batches of 50 members, run
// by a succession of engines that die mid-run, at settling dependents and around the write that
// ends a job. The same scenarios run on MongoDB (packages/mongo-store/test/flow-chaos.test.ts).
describeFlowChaos('MemoryStore', () => new MemoryStore(), { nodes: Number(process.env.DAG_NODES ?? 1_000) });
