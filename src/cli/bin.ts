#!/usr/bin/env node
// The `sendonce` bin (dist/cli.js). esbuild keeps the line above at the top of the built file.
// No top-level await: tsup builds every entry as CommonJS too.
import {main} from './main.js';

main(process.argv.slice(2)).then(
	code => {
		process.exitCode = code;
	},
	(error: unknown) => {
		// What the probes cannot turn into a verdict (an unwritable --json-report): not a server's fault.
		console.error(error);
		process.exitCode = 2;
	},
);
