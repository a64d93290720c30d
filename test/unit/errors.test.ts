import {runInNewContext} from 'node:vm';
import {describe, expect, test} from 'vitest';
import {
	createClient,
	InvalidRequestError,
	isSendOnceError,
	KeyGenerationError,
	SendOnceError,
	StoreError,
	UnresolvedIntentError,
} from '../../src/index.js';
import {testStore, URL_ORDERS} from './helpers.js';

async function anIntent() {
	return createClient({store: testStore()}).intent('order', {url: URL_ORDERS, json: {}});
}

describe('error classes', () => {
	test('InvalidRequestError has its name and code', () => {
		const error = new InvalidRequestError('`url` is missing');
		expect(error).toBeInstanceOf(SendOnceError);
		expect(error).toBeInstanceOf(Error);
		expect(error.name).toBe('InvalidRequestError');
		expect(error.code).toBe('INVALID_REQUEST');
		expect(error.message).toBe('`url` is missing');
	});

	test('UnresolvedIntentError has its name, code and the previous intent', async () => {
		const previous = await anIntent();
		const error = new UnresolvedIntentError(previous);
		expect(error).toBeInstanceOf(SendOnceError);
		expect(error.name).toBe('UnresolvedIntentError');
		expect(error.code).toBe('UNRESOLVED_INTENT');
		expect(error.previous).toBe(previous);
		expect(error.message).toContain(previous.key);
		expect(error.message).toContain('"order"');
	});

	test.each(['STORE_UNAVAILABLE', 'STORE_QUOTA', 'STORE_CORRUPT'] as const)('StoreError carries %s', code => {
		const error = new StoreError(code, 'the disk is full');
		expect(error).toBeInstanceOf(SendOnceError);
		expect(error.name).toBe('StoreError');
		expect(error.code).toBe(code);
	});

	test('KeyGenerationError has its name, code and a message that says what to do', () => {
		const error = new KeyGenerationError();
		expect(error).toBeInstanceOf(SendOnceError);
		expect(error.name).toBe('KeyGenerationError');
		expect(error.code).toBe('NO_SECURE_RANDOM');
		expect(error.message).toMatch(/react-native-get-random-values/);
	});

	test('errors keep their cause', () => {
		const cause = new Error('QuotaExceededError');
		expect(new StoreError('STORE_QUOTA', 'full', {cause}).cause).toBe(cause);
		expect(new InvalidRequestError('bad', {cause}).cause).toBe(cause);
	});

	test('the name survives in a stack trace and in String()', () => {
		expect(String(new InvalidRequestError('bad url'))).toBe('InvalidRequestError: bad url');
	});
});

describe('isSendOnceError()', () => {
	test('recognises every sendonce error', async () => {
		for (const error of [
			new SendOnceError('STORE_QUOTA', 'x'),
			new InvalidRequestError('x'),
			new UnresolvedIntentError(await anIntent()),
			new StoreError('STORE_CORRUPT', 'x'),
			new KeyGenerationError(),
		]) {
			expect(isSendOnceError(error)).toBe(true);
		}
	});

	test('recognises a plain object with a sendonce name and code (another realm, a worker message)', () => {
		expect(isSendOnceError({name: 'StoreError', code: 'STORE_QUOTA', message: 'full'})).toBe(true);
		expect(isSendOnceError({name: 'InvalidRequestError', code: 'INVALID_REQUEST'})).toBe(true);
		expect(isSendOnceError({name: 'UnresolvedIntentError', code: 'UNRESOLVED_INTENT'})).toBe(true);
		expect(isSendOnceError({name: 'KeyGenerationError', code: 'NO_SECURE_RANDOM'})).toBe(true);
		expect(isSendOnceError({name: 'SendOnceError', code: 'STORE_UNAVAILABLE'})).toBe(true);
	});

	test('recognises an error made in another realm', () => {
		const foreign = runInNewContext('const e = new Error("full"); e.name = "StoreError"; e.code = "STORE_QUOTA"; e') as unknown;
		expect(foreign instanceof Error).toBe(false);
		expect(isSendOnceError(foreign)).toBe(true);
	});

	test('rejects other errors and values', () => {
		expect(isSendOnceError(new Error('x'))).toBe(false);
		expect(isSendOnceError(new TypeError('x'))).toBe(false);
		expect(isSendOnceError(Object.assign(new Error('x'), {code: 'ECONNRESET'}))).toBe(false);
		expect(isSendOnceError({name: 'StoreError'})).toBe(false);
		expect(isSendOnceError({name: 'HTTPError', code: 'STORE_QUOTA'})).toBe(false);
		expect(isSendOnceError({name: 'StoreError', code: 22})).toBe(false);
		expect(isSendOnceError(null)).toBe(false);
		expect(isSendOnceError(undefined)).toBe(false);
		expect(isSendOnceError('StoreError')).toBe(false);
	});
});
