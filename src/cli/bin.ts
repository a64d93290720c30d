#!/usr/bin/env node
// The `sendonce` bin (dist/cli.js). esbuild keeps the line above at the top of the built file.
// No top-level await: tsup builds every entry as CommonJS too.
import {main} from './main.js';

void main(process.argv.slice(2)).then(code => {
	process.exitCode = code;
});
