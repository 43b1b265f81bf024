import { MemoryStore } from '@loom/core';
import { describeStoreConformance } from '@loom/testing';

describeStoreConformance('MemoryStore', () => ({ store: new MemoryStore() }));
