// MongoDB's unified spec tests for retryable-writes, run with the real driver against the emulator.
import { describeSuite } from './runner/suite.js';

describeSuite('retryable-writes');
