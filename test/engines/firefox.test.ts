import {firefox} from './firefox.js';
import {engineSuite} from './scenarios.js';

await engineSuite(firefox);
