import ky from 'ky';
import {describe, expect, test} from 'vitest';
import {createClient, type ClientOptions} from '../../src/index.js';
import {DEFAULTS, normalizeOptions} from '../../src/core/options.js';
import {testStore} from './helpers.js';

/** Options as a careless caller (plain JavaScript) might pass them. */
const loose = (options: unknown) => options as ClientOptions;

describe('defaults', () => {
	test('match the contract', () => {
		const options = normalizeOptions();
		expect(options).toMatchObject({
			store: 'auto',
			headerName: 'Idempotency-Key',
			keyFormat: 'raw',
			headers: {},
			persistHeaders: [],
			retry: {limit: 5, baseDelay: 300, maxDelay: 20_000, maxRetryAfter: 60_000, budget: 500},
			timeout: 15_000,
			window: 86_400_000,
		});
		expect(options.classify).toBeUndefined();
		expect(options.onEvent).toBeUndefined();
		expect(options.generateKey).toBeUndefined();
		expect(DEFAULTS.retry).toEqual({limit: 5, baseDelay: 300, maxDelay: 20_000, maxRetryAfter: 60_000, budget: 500});
	});

	test('a number for retry is shorthand for its limit', () => {
		expect(normalizeOptions({retry: 3}).retry).toEqual({limit: 3, baseDelay: 300, maxDelay: 20_000, maxRetryAfter: 60_000, budget: 500});
	});

	test('a partial retry object keeps the other defaults', () => {
		expect(normalizeOptions({retry: {baseDelay: 10}}).retry).toEqual({limit: 5, baseDelay: 10, maxDelay: 20_000, maxRetryAfter: 60_000, budget: 500});
	});

	test('budget: false turns the budget off', () => {
		expect(normalizeOptions({retry: {budget: false}}).retry.budget).toBe(false);
	});

	test('persistHeaders are compared in lower case', () => {
		expect(normalizeOptions({persistHeaders: ['X-Tenant']}).persistHeaders).toEqual(['x-tenant']);
	});

	test('accepts every documented option', () => {
		expect(() => createClient({
			store: testStore(),
			fetch: async (input: RequestInfo | URL, init?: RequestInit) => fetch(input, init),
			headerName: 'X-Idempotency-Key',
			keyFormat: 'sf-string',
			headers: async () => ({authorization: 'Bearer t'}),
			persistHeaders: ['x-tenant'],
			retry: {limit: 1, baseDelay: 0, maxDelay: 0, maxRetryAfter: 0, budget: 1},
			timeout: 1,
			window: 1,
			classify: () => undefined,
			onEvent() {},
			generateKey: () => 'k',
		})).not.toThrow();
		for (const store of ['auto', 'indexeddb', 'session', 'memory'] as const) expect(() => createClient({store})).not.toThrow();
	});

	test('accepts a ky instance as fetch', () => {
		expect(() => createClient({fetch: ky.create({prefixUrl: 'https://api.test'})})).not.toThrow();
	});
});

describe('validation', () => {
	test.each<[string, unknown, RegExp]>([
		['retry.limit', {retry: {limit: 0}}, /^Expected `retry\.limit` to be an integer ≥ 1, got 0$/],
		['retry.limit', {retry: {limit: 2.5}}, /^Expected `retry\.limit` to be/],
		['retry.limit', {retry: {limit: '3'}}, /^Expected `retry\.limit` to be .*, got "3"$/],
		['retry.baseDelay', {retry: {baseDelay: -1}}, /^Expected `retry\.baseDelay` to be/],
		['retry.maxDelay', {retry: {maxDelay: Number.NaN}}, /^Expected `retry\.maxDelay` to be/],
		['retry.maxDelay', {retry: {baseDelay: 500, maxDelay: 100}}, /^Expected `retry\.maxDelay` to be at least `retry\.baseDelay`/],
		['retry.maxRetryAfter', {retry: {maxRetryAfter: Number.POSITIVE_INFINITY}}, /^Expected `retry\.maxRetryAfter` to be/],
		['retry.budget', {retry: {budget: 0}}, /^Expected `retry\.budget` to be/],
		['retry.budget', {retry: {budget: true}}, /^Expected `retry\.budget` to be/],
		['retry', {retry: 0}, /^Expected `retry` to be/],
		['retry', {retry: 'often'}, /^Expected `retry` to be a number or an object/],
		['retry', {retry: null}, /^Expected `retry` to be a number or an object/],
		['timeout', {timeout: 0}, /^Expected `timeout` to be an integer from 1 to 2147483647/],
		['timeout', {timeout: '15s'}, /^Expected `timeout` to be/],
		['timeout', {timeout: 2 ** 31}, /^Expected `timeout` to be an integer from 1 to 2147483647 .*got 2147483648$/],
		['retry.maxDelay', {retry: {maxDelay: 3_000_000_000}}, /^Expected `retry\.maxDelay` to be an integer from 0 to 2147483647/],
		['retry.baseDelay', {retry: {baseDelay: 2 ** 31}}, /^Expected `retry\.baseDelay`/],
		['retry.maxRetryAfter', {retry: {maxRetryAfter: Number.MAX_SAFE_INTEGER}}, /^Expected `retry\.maxRetryAfter`/],
		['headers', {headers: {'x bad': '1'}}, /^Expected `headers` to be an object keyed by HTTP header names/],
		['headers.x-note', {headers: {'x-note': 'a\nb'}}, /^Expected `headers\.x-note` to be a string without line breaks/],
		['window', {window: -1}, /^Expected `window` to be/],
		['store', {store: 'localStorage'}, /^Expected `store` to be/],
		['store', {store: {get() {}}}, /^Expected `store` to be/],
		['headerName', {headerName: 'Idempotency Key'}, /^Expected `headerName` to be an HTTP header name/],
		['headerName', {headerName: ''}, /^Expected `headerName` to be/],
		['keyFormat', {keyFormat: 'quoted'}, /^Expected `keyFormat` to be 'raw' or 'sf-string'/],
		['headers', {headers: 'authorization: x'}, /^Expected `headers` to be/],
		['headers.x-count', {headers: {'x-count': 1}}, /^Expected `headers\.x-count` to be a string/],
		['persistHeaders', {persistHeaders: 'x-tenant'}, /^Expected `persistHeaders` to be an array of header names/],
		['persistHeaders', {persistHeaders: ['bad header']}, /^Expected `persistHeaders` to be/],
		['fetch', {fetch: 'https://api.test'}, /^Expected `fetch` to be/],
		['classify', {classify: 'success'}, /^Expected `classify` to be a function/],
		['onEvent', {onEvent: true}, /^Expected `onEvent` to be a function/],
		['generateKey', {generateKey: 'key'}, /^Expected `generateKey` to be a function/],
	])('refuses a bad `%s` with a TypeError naming it (%j)', (_name, options, message) => {
		expect(() => createClient(loose(options))).toThrow(TypeError);
		expect(() => createClient(loose(options))).toThrow(message);
	});

	test.each(['authorization', 'Authorization', 'cookie', 'Proxy-Authorization'])('refuses %s in persistHeaders: secrets are never stored', name => {
		expect(() => createClient({persistHeaders: ['x-tenant', name]})).toThrow(TypeError);
		expect(() => createClient({persistHeaders: [name]})).toThrow(/^Expected `persistHeaders` to be free of secrets/);
	});

	test('refuses an unknown option by name', () => {
		expect(() => createClient(loose({retries: 3}))).toThrow(TypeError);
		expect(() => createClient(loose({retries: 3}))).toThrow(/^Unknown option `retries`/);
	});

	test('refuses an unknown retry option by name', () => {
		expect(() => createClient(loose({retry: {limt: 3}}))).toThrow(TypeError);
		expect(() => createClient(loose({retry: {limt: 3}}))).toThrow(/^Unknown option `retry\.limt`/);
	});

	test('refuses options that are not an object', () => {
		expect(() => createClient(loose('memory'))).toThrow(/^Expected `options` to be an object/);
		expect(() => createClient(loose(null))).toThrow(TypeError);
	});

	test('a function in a message is shown as "a function"', () => {
		expect(() => createClient(loose({timeout: () => 5}))).toThrow(/got a function$/);
	});
});
