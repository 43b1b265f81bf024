import { readFileSync } from 'node:fs';
import { Container } from 'inversify';
import type { JobClass } from '@loom/core';

declare const FulfillOrder: JobClass;
const container = new Container();

import { replayRun } from '@loom/testing';
import type { RunRecord } from '@loom/core';

// run.json: `loom jobs export 665f1c2e9b1d4a0012345678 > run.json` of a run that failed in production
const record = JSON.parse(readFileSync('run.json', 'utf8')) as RunRecord;
const result = await replayRun(FulfillOrder, record, {
  container, // how to build the class
  rerunSteps: ['ship'], // steps to run for real; the others answer from the record
});
// result = { status: 'completed' | 'dead' | 'waiting' | ..., result?, error?, stepsRun: ['ship', ...] }
