import type {Reporter, SerializedError, TestCase, TestModule, TestSuite} from 'vitest/node';

/**
 * Ends the run with one plain line, `N passed, N failed`, that CI and people can read without
 * knowing Vitest's summary format.
 *
 * Failed counts everything that did not pass and was not skipped on purpose: failed tests; tests
 * that never ran because their file or suite crashed while setting up (Vitest reports them as
 * skipped); a file or suite whose crash took no test with it (an error while loading, or in an
 * `afterAll`); and each unhandled error. Skipped counts only `skip`, `todo`, `only` elsewhere and
 * `ctx.skip()`.
 */
export default class SummaryReporter implements Reporter {
	onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError>): void {
		const count = {passed: 0, failed: unhandledErrors.length, skipped: 0};
		for (const module of testModules) {
			const crashed = [module, ...module.children.allSuites()].filter(suite => suite.errors().length > 0);
			const takenDown = new Set<TestModule | TestSuite>();
			for (const test of module.children.allTests()) {
				const {state} = test.result();
				if (state === 'passed' || state === 'failed') {
					count[state]++;
					continue;
				}

				const cause = test.options.mode === 'run' ? crashed.find(suite => contains(suite, test)) : undefined;
				// Meant to run (no `skip`, `todo` or `only` elsewhere), and a crash around it stopped it.
				if (cause) {
					count.failed++;
					takenDown.add(cause);
				} else {
					count.skipped++;
				}
			}

			count.failed += crashed.filter(suite => !takenDown.has(suite)).length;
		}

		process.stdout.write(`\n${count.passed} passed, ${count.failed} failed${count.skipped > 0 ? `, ${count.skipped} skipped` : ''}\n`);
	}
}

function contains(suite: TestModule | TestSuite, test: TestCase): boolean {
	for (let parent: TestModule | TestSuite = test.parent; ; parent = parent.parent) {
		if (parent === suite) return true;
		if (parent.type === 'module') return false;
	}
}
