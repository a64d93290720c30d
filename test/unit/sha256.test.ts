import {createHash} from 'node:crypto';
import fc from 'fast-check';
import {afterEach, describe, expect, test, vi} from 'vitest';
import {fingerprint} from '../../src/core/fingerprint.js';
import {createClient} from '../../src/index.js';
import {sha256} from '../../src/bindings/react-native.js';
import {sha256Hex, utf8} from '../../src/core/sha256.js';
import {testStore, URL_ORDERS} from './helpers.js';

const realCrypto = globalThis.crypto;
/** A crypto without `subtle`, as on an insecure origin or in Hermes. */
const noSubtle = () => ({randomUUID: () => realCrypto.randomUUID(), getRandomValues: <T extends ArrayBufferView>(array: T) => realCrypto.getRandomValues(array as never) as T});
const nodeSha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** A runtime as Hermes or a browser page is: no Node hash handed over. */
const withoutNodeHash = () => vi.spyOn(process, 'getBuiltinModule').mockReturnValue(undefined as never);

afterEach(() => {
	vi.unstubAllGlobals();
	vi.restoreAllMocks();
});

describe('sha256Hex(), the bundled fallback', () => {
	test('hashes the empty string', () => {
		expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
	});

	test('hashes the FIPS 180-4 examples', () => {
		expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
		expect(sha256Hex('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq')).toBe('248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1');
	});

	test('equals node:crypto at every padding boundary', () => {
		for (let length = 0; length <= 200; length++) {
			const text = 'a'.repeat(length);
			expect(sha256Hex(text)).toBe(nodeSha256(text));
		}
	});

	test('equals node:crypto for random strings', () => {
		fc.assert(fc.property(fc.string({unit: 'binary', maxLength: 300}), text => sha256Hex(text) === nodeSha256(text)), {numRuns: 500});
	});

	test('equals node:crypto for long strings', () => {
		fc.assert(fc.property(fc.string({unit: 'grapheme', minLength: 1000, maxLength: 5000}), text => sha256Hex(text) === nodeSha256(text)), {numRuns: 20});
	});
});

describe('utf8()', () => {
	test('encodes like TextEncoder when TextEncoder is missing (Hermes)', () => {
		const texts = fc.sample(fc.string({unit: 'binary', maxLength: 100}), 300);
		const expected = texts.map(text => Array.from(new TextEncoder().encode(text)));
		vi.stubGlobal('TextEncoder', undefined);
		expect(texts.map(text => Array.from(utf8(text)))).toEqual(expected);
		expect(Array.from(utf8('a€😀é'))).toEqual([0x61, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80, 0xc3, 0xa9]);
	});
});

describe('fingerprint()', () => {
	test('is SHA-256 over method, URL and body', async () => {
		expect(await fingerprint('POST', URL_ORDERS, '{"a":1}')).toBe(nodeSha256(`POST ${URL_ORDERS}\n{"a":1}`));
	});

	test('in Node, hashes with node:crypto, without a trip through Web Crypto', async () => {
		const digest = vi.spyOn(globalThis.crypto.subtle, 'digest');
		expect(await fingerprint('POST', URL_ORDERS, '{"a":1}')).toBe(nodeSha256(`POST ${URL_ORDERS}\n{"a":1}`));
		expect(digest).not.toHaveBeenCalled();
	});

	test('Node\'s hash, Web Crypto and the fallback give the same hex', async () => {
		const texts = fc.sample(fc.string({unit: 'binary', maxLength: 200}), 50);
		const viaNode = await Promise.all(texts.map(async text => fingerprint('PUT', URL_ORDERS, text)));
		withoutNodeHash();
		const digest = vi.spyOn(globalThis.crypto.subtle, 'digest');
		const viaSubtle = await Promise.all(texts.map(async text => fingerprint('PUT', URL_ORDERS, text)));
		expect(digest).toHaveBeenCalledTimes(texts.length);
		vi.stubGlobal('crypto', noSubtle());
		const viaFallback = await Promise.all(texts.map(async text => fingerprint('PUT', URL_ORDERS, text, sha256)));
		expect(viaSubtle).toEqual(viaNode);
		expect(viaFallback).toEqual(viaNode);
	});

	test('without Web Crypto and without the sha256 option, intent() says what to pass, storing nothing', async () => {
		withoutNodeHash();
		vi.stubGlobal('crypto', noSubtle());
		const store = testStore();
		await expect(createClient({store}).intent('order', {url: URL_ORDERS, json: {}})).rejects.toMatchObject({name: 'SendOnceError', code: 'NO_WEB_CRYPTO', message: expect.stringMatching(/`sha256` from 'sendonce\/react-native'/)});
		expect(store.writes).toEqual([]);
	});

	test('an intent made without Web Crypto matches one made with it', async () => {
		const store = testStore();
		const withSubtle = await createClient({store}).intent('order', {url: URL_ORDERS, json: {b: 2, a: 1}});
		withoutNodeHash();
		vi.stubGlobal('crypto', noSubtle());
		const withoutSubtle = await createClient({store, sha256}).intent('order', {url: URL_ORDERS, json: {a: 1, b: 2}});

		expect(withoutSubtle.fingerprint).toBe(withSubtle.fingerprint);
		expect(withoutSubtle.key).toBe(withSubtle.key);
	});
});
