// MongoDB's unified spec tests for change-streams, run with the real driver against the emulator.
import { describeSuite } from './runner/suite.js';

describeSuite('change-streams');
