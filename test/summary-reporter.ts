import type {Reporter, TestModule} from 'vitest/node';

/**
 * Ends the run with one plain line, `N passed, N failed`, that CI and people can read without
 * knowing Vitest's summary format.
 */
export default class SummaryReporter implements Reporter {
	onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
		const count = {passed: 0, failed: 0, skipped: 0};
		for (const module of testModules) {
			for (const test of module.children.allTests()) {
				const {state} = test.result();
				if (state === 'passed' || state === 'failed') count[state]++;
				else count.skipped++;
			}
		}

		process.stdout.write(`\n${count.passed} passed, ${count.failed} failed${count.skipped > 0 ? `, ${count.skipped} skipped` : ''}\n`);
	}
}
