// MongoDB's unified spec tests for transactions-convenient-api, run with the real driver against the emulator.
import { describeSuite } from './runner/suite.js';

describeSuite('transactions-convenient-api');
