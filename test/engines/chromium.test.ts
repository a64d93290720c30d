import {chromium} from './chromium.js';
import {engineSuite} from './scenarios.js';

await engineSuite(chromium);
