import { MemoryStore } from '@loom/core';
import { describeStoreConformance } from '@loom/testing/jest';

describeStoreConformance('MemoryStore', () => ({ store: new MemoryStore() }));
