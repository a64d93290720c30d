#!/usr/bin/env node
// The `sendonce` bin (dist/cli.js). esbuild keeps the line above at the top of the built file.
import {main} from './main.js';

process.exitCode = await main(process.argv.slice(2));
