import { MemoryStore } from '@loom/core';
import { describeStoreConformance, yieldingStore } from '@loom/testing/jest';

describeStoreConformance('MemoryStore', () => ({ store: new MemoryStore() }));

// MemoryStore does each call without awaiting, so the suite's Promise.all tests cannot interleave
// its calls; through yieldingStore, concurrent calls reach it in varied orders, with other calls'
// answers in between (see yieldingStore for what this does and does not prove).
describeStoreConformance('MemoryStore, calls delayed by varying event-loop turns', () => ({ store: yieldingStore(new MemoryStore()) }));
