import {defineConfig} from 'vitest/config';
import {peerProject} from './test/peers/project.js';

export default defineConfig({
	test: {
		// In a log, the default reporter prints a file's line when the file ends; the progress
		// reporter says what is running in between, and the summary reporter ends the run with one line.
		reporters: ['default', './test/progress-reporter.ts', './test/summary-reporter.ts'],
		projects: [
			// Each peer's tests again at the other end of its range (test/peers/matrix.ts).
			peerProject('lowest'),
			peerProject('newest'),
			{
				test: {
					name: 'unit',
					include: ['test/unit/**/*.test.ts', 'test/unit/**/*.test.tsx', 'test/integration/**/*.test.ts'],
					environment: 'node',
				},
			},
			{
				test: {
					// `npm pack`, installed into an app in a temporary folder, and used there.
					name: 'package',
					include: ['test/package/**/*.test.ts'],
					environment: 'node',
					// Packing builds the package; each test runs a compiler, a linter or Node.
					testTimeout: 60_000,
					hookTimeout: 180_000,
				},
			},
			{
				test: {
					// sendonce/server, against memory and the real Redis and PostgreSQL when they answer;
					// and `sendonce check`, which probes it and servers that break its rules.
					name: 'server',
					include: ['test/server-half/**/*.test.ts', 'test/cli/**/*.test.ts'],
					environment: 'node',
					globalSetup: ['test/server-half/services.ts'],
					testTimeout: 20_000,
					hookTimeout: 20_000,
				},
			},
			{
				test: {
					// The fault test: server processes killed and restarted, store connections stalled,
					// dropped and reset, a faulty network, for 12 s per mode and store. It runs after the
					// other projects, so that the load it makes cannot slow their tests.
					name: 'faults',
					// And the outbox example's chain (test/outbox) under kills and faults.
					include: ['test/faults/**/*.test.ts', 'test/outbox/**/*.test.ts'],
					environment: 'node',
					globalSetup: ['test/server-half/services.ts'],
					sequence: {groupOrder: 1},
					testTimeout: 180_000,
					hookTimeout: 60_000,
				},
			},
			{
				test: {
					// A React Native app bundled by Metro and run by the Hermes VM (hermes-engine-cli).
					name: 'hermes',
					include: ['test/hermes/**/*.test.ts'],
					environment: 'node',
					testTimeout: 30_000,
					hookTimeout: 180_000,
				},
			},
			{
				test: {
					// Real Chromium, driven from Node: reloads, restarts, tabs and IndexedDB.
					name: 'browser',
					include: ['test/browser/**/*.test.ts'],
					environment: 'node',
					// PostgreSQL for the demo's full mode (test/browser/demo.test.ts).
					globalSetup: ['test/browser/global-setup.ts', 'test/server-half/services.ts'],
					fileParallelism: false,
					// Each poll is a round trip into the page, and records are deleted 250 ms after
					// they settle: a loaded machine needs more than the default second.
					expect: {poll: {timeout: 5000}},
					testTimeout: 30_000,
					hookTimeout: 30_000,
				},
			},
			{
				test: {
					// The same scenarios in Chromium, Firefox ESR and WebKitGTK (test/engines/scenarios.ts).
					name: 'engines',
					include: ['test/engines/**/*.test.ts'],
					environment: 'node',
					globalSetup: ['test/engines/global-setup.ts'],
					fileParallelism: false,
					// After the other projects, so that three browsers never share the two cores with them.
					sequence: {groupOrder: 2},
					expect: {poll: {timeout: 10_000}},
					testTimeout: 60_000,
					hookTimeout: 60_000,
				},
			},
		],
	},
});
