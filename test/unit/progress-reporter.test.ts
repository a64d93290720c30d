import {afterEach, beforeEach, describe, expect, test, vi} from 'vitest';
import type {TestModule, TestSpecification} from 'vitest/node';
import ProgressReporter from '../progress-reporter.js';

/** A test file as the reporter sees it: its project's name and its path. */
function file(project: string, path: string): TestModule & TestSpecification {
	return {project: {name: project}, moduleId: `/repo/${path}`, relativeModuleId: path} as unknown as TestModule & TestSpecification;
}

const hermes = file('hermes', 'test/hermes/hermes.test.ts');
const pack = file('package', 'test/package/package.test.ts');
const state = file('unit', 'test/unit/state.test.ts');

describe('the progress reporter, in a log', () => {
	let output: string[];
	let reporter: ProgressReporter;

	beforeEach(() => {
		vi.useFakeTimers();
		output = [];
		reporter = new ProgressReporter({terminal: false, write: text => output.push(text), now: Date.now});
	});

	afterEach(() => {
		reporter.onTestRunEnd();
		vi.useRealTimers();
	});

	test('says at the start how many files each project runs', () => {
		reporter.onTestRunStart([hermes, pack, state, file('unit', 'test/unit/key.test.ts')]);
		expect(output).toEqual(['4 test files (hermes 1, package 1, unit 2). Each file\'s line comes when it ends; while none does, the files still running are named every 20 s.\n']);
	});

	test('names the file still running, for how long, and how many are done, after 20 s without a file ending', () => {
		reporter.onTestRunStart([hermes, pack]);
		reporter.onTestModuleStart(hermes);
		vi.advanceTimersByTime(19_000);
		expect(output).toHaveLength(1);
		vi.advanceTimersByTime(1000);
		expect(output.slice(1)).toEqual(['  0 of 2 files done; still running: |hermes| test/hermes/hermes.test.ts (20 s)\n']);
		vi.advanceTimersByTime(20_000);
		expect(output.slice(2)).toEqual(['  0 of 2 files done; still running: |hermes| test/hermes/hermes.test.ts (40 s)\n']);
	});

	test('stays silent while files keep ending, and names only the ones still running', () => {
		reporter.onTestRunStart([hermes, pack, state]);
		reporter.onTestModuleStart(hermes);
		vi.advanceTimersByTime(15_000);
		reporter.onTestModuleEnd(hermes);
		reporter.onTestModuleStart(pack);
		reporter.onTestModuleStart(state);
		vi.advanceTimersByTime(15_000);
		reporter.onTestModuleEnd(state);
		vi.advanceTimersByTime(19_000);
		expect(output).toHaveLength(1);
		vi.advanceTimersByTime(1000);
		expect(output.slice(1)).toEqual(['  2 of 3 files done; still running: |package| test/package/package.test.ts (35 s)\n']);
	});

	test('says "1 test file" for one', () => {
		reporter.onTestRunStart([state]);
		expect(output[0]).toMatch(/^1 test file \(unit 1\)\. /);
	});

	test('stops when the run ends', () => {
		reporter.onTestRunStart([hermes]);
		reporter.onTestModuleStart(hermes);
		reporter.onTestRunEnd();
		vi.advanceTimersByTime(60_000);
		expect(output).toHaveLength(1);
		expect(vi.getTimerCount()).toBe(0);
	});
});

test('in a terminal, where Vitest shows the running files itself, the progress reporter prints nothing', () => {
	vi.useFakeTimers();
	const output: string[] = [];
	const reporter = new ProgressReporter({terminal: true, write: text => output.push(text)});
	reporter.onTestRunStart([hermes]);
	reporter.onTestModuleStart(hermes);
	vi.advanceTimersByTime(60_000);
	reporter.onTestRunEnd();
	vi.useRealTimers();
	expect(output).toEqual([]);
});
