// MongoDB's unified spec tests for crud, run with the real driver against the emulator.
import { describeSuite } from './runner/suite.js';

describeSuite('crud');
