import {execFile} from 'node:child_process';
import {fileURLToPath} from 'node:url';
import {describe, expect, test} from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURES = 'test/fixtures/summary-reporter/vitest.config.ts';

/** `vitest run …args` in its own process, as `npm test` runs it: its exit code, stdout, and both outputs together. */
async function vitest(args: string[], env: Record<string, string> = {}): Promise<{code: number; stdout: string; output: string}> {
	// The outer run's own variables would make the inner Vitest think it is one of its workers.
	const outer = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('VITEST') && name !== 'TEST'));
	return new Promise(resolve => {
		execFile(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', ...args], {cwd: ROOT, env: {...outer, NO_COLOR: '1', ...env}}, (error, stdout, stderr) => {
			resolve({code: typeof error?.code === 'number' ? error.code : 0, stdout, output: `${stdout}\n${stderr}`});
		});
	});
}

/** The last line on stdout: the summary reporter's. */
function closingLine(stdout: string): string | undefined {
	return stdout.trimEnd().split('\n').at(-1);
}

describe.concurrent('the closing line', () => {
	test.each([
		['passing', 0, '1 passed, 0 failed, 2 skipped'],
		['failing', 1, '1 passed, 1 failed'],
		['crash-at-load', 1, '0 passed, 1 failed'],
		['crash-in-setup', 1, '1 passed, 2 failed'],
		['crash-in-file-setup', 1, '0 passed, 2 failed'],
		['crash-in-teardown', 1, '1 passed, 1 failed'],
		['unhandled', 1, '1 passed, 1 failed'],
	])('for %s.fixture.ts is the one Vitest exits with', async (fixture, code, line) => {
		const run = await vitest(['--config', FIXTURES, `${fixture}.fixture.ts`]);
		expect(closingLine(run.stdout), run.output).toBe(line);
		expect(run.code, run.output).toBe(code);
	}, 60_000);

	test('adds up every file of a run', async () => {
		const run = await vitest(['--config', FIXTURES]);
		expect(closingLine(run.stdout), run.output).toBe('5 passed, 8 failed, 2 skipped');
		expect(run.code).toBe(1);
	}, 60_000);

	test('without Chromium, counts the browser tests as failed and says once how to get Chromium', async () => {
		const run = await vitest(['--project', 'browser', 'test/browser/tabs.test.ts'], {CHROME_PATH: '/nonexistent'});
		expect(closingLine(run.stdout), run.output).toMatch(/^0 passed, [1-9]\d* failed$/);
		expect(run.code).toBe(1);
		const advice = run.output.split('\n').filter(line => line.includes('/nonexistent'));
		expect(advice).toEqual([
			'Error: No Chromium at /nonexistent: the browser tests drive a real one. Install Debian\'s (apt-get install chromium) or set CHROME_PATH to a Chromium or Chrome binary.',
		]);
	}, 60_000);
});
