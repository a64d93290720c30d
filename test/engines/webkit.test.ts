import {webkit} from './webkit.js';
import {engineSuite} from './scenarios.js';

await engineSuite(webkit);
