import {fileURLToPath} from 'node:url';
import {build} from 'esbuild';
import {beforeAll, describe, expect, test} from 'vitest';
import {devOnly} from '../../scripts/dev-only.js';
import * as development from '../../src/index.js';
import {URL_ORDERS} from './helpers.js';

// sendonce as an app's bundler ships it: the sources built as dist/ is (scripts/dev-only.ts),
// with `process.env.NODE_ENV` defined as `"production"`, and left undefined.
type Sendonce = typeof development;

const ENTRY = fileURLToPath(new URL('../../src/index.ts', import.meta.url));

/** src/index.ts as one classic script that sets `sendonce`, minified as for a page. */
async function bundle(nodeEnv: string): Promise<string> {
	const result = await build({
		entryPoints: [ENTRY],
		bundle: true,
		minify: true,
		format: 'iife',
		globalName: 'sendonce',
		platform: 'browser',
		target: 'es2022',
		write: false,
		define: {'process.env.NODE_ENV': nodeEnv},
		plugins: [devOnly],
		logLevel: 'silent',
	});
	return result.outputFiles[0]!.text;
}

/**
 * The script run as if there were no `process` (a page, a service worker): `process` is
 * shadowed by an undefined parameter. (In a realm of its own, the test's objects would not be
 * plain JSON data there.)
 */
function load(script: string): Sendonce {
	return new Function('process', `${script}\nreturn sendonce;`)(undefined) as Sendonce;
}

/** Long texts that only development builds say. */
const LONG = [
	'Unknown option',
	'to be a string of 1 to',
	'which JSON cannot represent',
	'may have been sent with another body',
	'CORS refused the request',
	'react-native-get-random-values',
	'no-cors strips the key',
	'reload the page',
];

let production: string;
let undefinedEnv: string;
beforeAll(async () => {
	[production, undefinedEnv] = await Promise.all([bundle('"production"'), bundle('process.env.NODE_ENV')]);
}, 30_000);

/** What a thrown error is made of, for comparing builds. */
async function thrown(attempt: () => unknown): Promise<{name: string; code: unknown; message: string}> {
	try {
		await attempt();
	} catch (error) {
		const {name, code, message} = error as {name: string; code?: unknown; message: string};
		return {name, code, message};
	}

	throw new Error('Expected it to throw');
}

/** Bad inputs that a production build still refuses: checks of what a user may type or a server send. */
const REFUSED: Array<[string, (sendonce: Sendonce) => unknown]> = [
	['an empty scope', async ({createClient}) => createClient({store: 'memory'}).intent('', {url: URL_ORDERS, json: {}})],
	['an ftp: URL', async ({createClient}) => createClient({store: 'memory'}).intent('order', {url: 'ftp://files.test/orders', json: {}})],
	['NaN in json', async ({createClient}) => createClient({store: 'memory'}).intent('order', {url: URL_ORDERS, json: {total: Number.NaN}})],
	['a header value with a line break', async ({createClient}) => createClient({store: 'memory'}).intent('order', {url: URL_ORDERS, json: {}, headers: {'x-note': 'a\r\nb'}})],
	['a secret in persistHeaders', ({createClient}) => createClient({persistHeaders: ['Authorization']})],
	// What would store and send another body than the one meant, or lose every intent.
	['an unknown request field (a typo of json)', async ({createClient}) => createClient({store: 'memory'}).intent('order', {url: URL_ORDERS, jsn: {total: 5}} as never)],
	['both json and body', async ({createClient}) => createClient({store: 'memory'}).intent('order', {url: URL_ORDERS, json: {total: 5}, body: 'total=6'} as never)],
	['a window of Infinity, which no record can store', ({createClient}) => createClient({window: Number.POSITIVE_INFINITY})],
	['a window given as a string', ({createClient}) => createClient({window: '86400000' as never})],
	['a timeout past what setTimeout keeps', ({createClient}) => createClient({timeout: 2 ** 31})],
	['a key from generateKey that no header can carry', async ({createClient}) => createClient({store: 'memory', generateKey: () => 'a key'}).intent('order', {url: URL_ORDERS, json: {}})],
	// A zod-3-shaped schema: stored and sent, its answer would fail to validate after the effect (issue 31, 6).
	['a schema that is no Standard Schema (zod 3)', async ({createClient}) => createClient({store: 'memory'}).intent('order', {url: URL_ORDERS, json: {}, schema: {parse: (value: unknown) => value, safeParse: (value: unknown) => ({success: true, data: value})} as never})],
];

describe('built for production (`process.env.NODE_ENV` defined as "production")', () => {
	test('carries none of the long messages, nor a bare `process`', () => {
		expect(LONG.filter(text => production.includes(text))).toEqual([]);
		// Only as `globalThis.process?.…` (Node's hash for fingerprints), which reads undefined in a browser.
		expect(production).not.toMatch(/(?<![\w$.])process\b/);
		expect(production.match(/globalThis\.process\?\./g)).toHaveLength(1);
	});

	test('is smaller than the same sources with `process.env.NODE_ENV` left undefined, which keep every message', () => {
		expect(LONG.filter(text => !undefinedEnv.includes(text))).toEqual([]);
		expect(production.length).toBeLessThan(undefinedEnv.length * 0.9);
	});

	test.each(REFUSED)('refuses %s with the same error name and code as development, and a short message', async (_what, attempt) => {
		const inDevelopment = await thrown(() => attempt(development));
		const inProduction = await thrown(() => attempt(load(production)));
		expect({name: inProduction.name, code: inProduction.code}).toEqual({name: inDevelopment.name, code: inDevelopment.code});
		expect(inProduction.message.length).toBeLessThan(inDevelopment.message.length);
		expect(inProduction.message.length).toBeLessThanOrEqual(40);
	});

	test('refuses a schema that is no Standard Schema before anything is stored or sent (issue 31, 6)', async () => {
		const sendonce = load(production);
		let sent = 0;
		const client = sendonce.createClient({store: 'memory', fetch: async () => {
			sent++;
			return new Response('{"id":1}', {status: 201, headers: {'content-type': 'application/json'}});
		}});
		const error = await thrown(async () => client.intent('order', {url: URL_ORDERS, json: {}, schema: {parse: (value: unknown) => value} as never}));
		expect(error).toEqual({name: 'InvalidRequestError', code: 'INVALID_REQUEST', message: 'Invalid `schema`'});
		expect(await client.list()).toEqual([]);
		expect(sent).toBe(0);
	});

	test('names the field in its short message', async () => {
		const sendonce = load(production);
		const error = await thrown(async () => sendonce.createClient({store: 'memory'}).intent('order', {url: URL_ORDERS, json: {items: [1, Number.POSITIVE_INFINITY]}}));
		expect(error).toEqual({name: 'InvalidRequestError', code: 'INVALID_REQUEST', message: 'Invalid `json.items[1]`'});
	});

	test('leaves out the checks of the client\'s options that only a programmer\'s mistake fails', async () => {
		const sendonce = load(production);
		expect(() => sendonce.createClient({retries: 3} as never)).not.toThrow();
		await expect(thrown(() => development.createClient({retries: 3} as never))).resolves.toMatchObject({name: 'TypeError', message: expect.stringMatching(/^Unknown option `retries`/)});
	});
});

describe('built with `process.env.NODE_ENV` left undefined', () => {
	test('runs where there is no `process`, as a production build', async () => {
		const sendonce = load(undefinedEnv);
		expect(() => sendonce.createClient({retries: 3} as never)).not.toThrow();
		const error = await thrown(async () => sendonce.createClient({store: 'memory'}).intent('', {url: URL_ORDERS, json: {}}));
		expect(error).toEqual({name: 'InvalidRequestError', code: 'INVALID_REQUEST', message: 'Invalid `scope`'});
	});
});
