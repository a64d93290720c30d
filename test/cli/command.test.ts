import {execFile} from 'node:child_process';
import {fileURLToPath} from 'node:url';
import {describe, expect, test} from 'vitest';
import {sameAnswer} from '../../src/cli/answers.js';
import {HELP, parseCommandLine} from '../../src/cli/args.js';
import {main} from '../../src/cli/main.js';
import {quoted} from '../../src/cli/probes/key-format.js';
import {otherBody} from '../../src/cli/probes/mismatch.js';
import {globalKeys} from '../server/broken/global-keys.js';
import {honestServer} from '../server/honest.js';
import {serve} from '../server/orders.js';
import {ALL_PROBES, recordingIo, runCheck, verdictsOf} from './run.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('the command line', () => {
	test('--help explains every flag and warns that the requests are real', async () => {
		const io = recordingIo();
		expect(await main(['check', '--help'], io)).toBe(0);
		const help = io.out.join('');
		expect(help).toBe(HELP);
		for (const flag of ['--json', '-H, --header', '-X, --method', '--concurrency', '--origin', '--as', '--json-report', '--timeout', '-y, --yes', '-h, --help']) expect(help).toContain(flag);
		expect(help).toMatch(/WARNING: this sends real requests that take effect/);
		expect(help).toContain('a test endpoint, or use a test account');
	});

	test.each([
		[['check'], 'Expected the URL to check'],
		[['probe', 'https://api.test/orders'], 'Unknown command \'probe\''],
		[['check', 'ftp://api.test/orders'], 'Expected an http: or https: URL'],
		[['check', 'https://api.test/orders', '--json', '{sku'], 'Expected --json to be JSON'],
		[['check', 'https://api.test/orders', '-H', 'Authorization'], 'Expected -H to be \'Name: value\''],
		[['check', 'https://api.test/orders', '--concurrency', '0'], 'Expected --concurrency to be a positive integer'],
		[['check', 'https://api.test/orders', '--retries', '3'], 'Unknown option \'--retries\''],
	])('%j is refused with exit code 2 and says why', async (argv, message) => {
		const io = recordingIo();
		expect(await main(argv, io)).toBe(2);
		expect(io.err.join('')).toContain(message);
		expect(io.out).toEqual([]);
	});

	test('reads headers, users, the origin and numbers', () => {
		const parsed = parseCommandLine(['check', 'https://api.test/orders', '-H', 'Authorization: Bearer t', '--as', 'Cookie: a=1\nX-Tenant: 7', '--as', 'Cookie: b=2', '--origin', 'https://app.test/x', '--concurrency', '5', '-X', 'put']);
		expect(parsed).toMatchObject({
			type: 'check',
			options: {method: 'PUT', body: '{}', headers: {authorization: 'Bearer t'}, users: [{cookie: 'a=1', 'x-tenant': '7'}, {cookie: 'b=2'}], origin: 'https://app.test', concurrency: 5, yes: false},
		});
	});
});

describe('confirmation', () => {
	test('without --yes and without a terminal, nothing is sent and the exit code is 2', async () => {
		const server = honestServer();
		const served = await serve(server.handle);
		try {
			const io = recordingIo();
			expect(await main(['check', served.url], io)).toBe(2);
			expect(io.err.join('')).toContain('pass --yes');
			expect(server.executions.size).toBe(0);
		} finally {
			await served.close();
		}
	});

	test.each([['n', 2, 0], ['yes', 0, 9]])('at a terminal it asks first; answered %j: exit code %i, %i orders created', async (answer, code, created) => {
		const server = honestServer();
		const served = await serve(server.handle);
		try {
			const io = recordingIo({interactive: true, answer});
			expect(await main(['check', served.url, '--concurrency', '3'], io)).toBe(code);
			expect(io.asked).toEqual([`This sends at most 33 real POST requests to ${served.url}, each of which may take effect (a test endpoint or account?). Go ahead? [y/N] `]);
			expect(server.executions.size).toBe(created);
		} finally {
			await served.close();
		}
	});
});

describe('the report', () => {
	test('--json-report holds the verdicts the lines print, the counts and the exit code', async () => {
		const served = await serve(globalKeys().handle);
		try {
			const run = await runCheck(served.url, ALL_PROBES);
			expect(Object.fromEntries(run.report.probes.map(probe => [probe.id, probe.verdict]))).toEqual(run.verdicts);
			expect(run.report.summary).toEqual({pass: 8, warn: 0, fail: 1, skip: 0, none: 0});
			expect(run.report.exitCode).toBe(run.code);
			expect(run.report.probes[7]).toMatchObject({id: 'per-user', fix: expect.stringContaining('scope') as string, rule: expect.stringContaining('Stripe') as string});
		} finally {
			await served.close();
		}
	});

	test('without --origin and --as, those probes are skipped, not failed', async () => {
		const served = await serve(honestServer().handle);
		try {
			const run = await runCheck(served.url);
			expect(run.verdicts).toMatchObject({cors: 'skip', 'per-user': 'skip'});
			expect(run.stdout).toMatch(/^7 passed, 0 warned, 0 failed, 2 skipped/m);
			expect(run.code).toBe(0);
		} finally {
			await served.close();
		}
	});

	test('an endpoint that does not answer fails each probe with the network error', async () => {
		const served = await serve(honestServer().handle);
		await served.close();
		const run = await runCheck(served.url);
		expect(run.stdout).toMatch(/^FAIL {2}1 No key: sent POST .*; got no answer: connect ECONNREFUSED/m);
		expect(run.code).toBe(1);
	});
});

test('the bin, run as a process, exits 1 when a probe fails', async () => {
	const served = await serve(globalKeys().handle);
	try {
		const result = await new Promise<{code: number; stdout: string}>(resolve => {
			execFile(process.execPath, ['--import', 'tsx', 'src/cli/bin.ts', 'check', served.url, '--yes', ...ALL_PROBES], {cwd: ROOT}, (error, stdout) => {
				resolve({code: typeof error?.code === 'number' ? error.code : 0, stdout});
			});
		});
		expect(verdictsOf(result.stdout)['per-user']).toBe('fail');
		expect(result.code).toBe(1);
	} finally {
		await served.close();
	}
});

describe('the probes\' pure parts', () => {
	test('two answers are the same when status and body are, JSON compared by value', () => {
		const answer = (status: number, body: string) => ({status, body, headers: {}, ms: 0});
		expect(sameAnswer(answer(201, '{"a":1,"b":[1,2]}'), answer(201, '{"b":[1,2], "a":1}'))).toBe(true);
		expect(sameAnswer(answer(201, '{"id":1}'), answer(200, '{"id":1}'))).toBe(false);
		expect(sameAnswer(answer(201, '{"id":1}'), answer(201, '{"id":2}'))).toBe(false);
		expect(sameAnswer(answer(201, 'ok'), answer(201, 'ok'))).toBe(true);
	});

	test('another body adds a field to an object and wraps anything else', () => {
		expect(JSON.parse(otherBody('{"sku":"A1"}'))).toEqual({sku: 'A1', sendonceCheck: 'another body'});
		expect(JSON.parse(otherBody('[1]'))).toEqual([[1], 'another body']);
	});

	test('a key as an sf-string escapes quotes and backslashes', () => {
		expect(quoted('abc')).toBe('"abc"');
		expect(quoted(String.raw`a"b\c`)).toBe(String.raw`"a\"b\\c"`);
	});
});
