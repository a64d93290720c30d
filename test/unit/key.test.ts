import {HttpResponse} from 'msw';
import {afterEach, beforeEach, describe, expect, test, vi} from 'vitest';
import {sha256} from '../../src/bindings/react-native.js';
import {createClient, KeyGenerationError} from '../../src/index.js';
import {checkKey, formatKey, randomKey} from '../../src/core/key.js';
import {drive, testStore, URL_ORDERS, useMsw} from './helpers.js';

const {api} = useMsw();

const V4 = /^[\da-f]{8}-[\da-f]{4}-4[\da-f]{3}-[89ab][\da-f]{3}-[\da-f]{12}$/;

/** A getRandomValues that fills with `byte` and reports each call to `spy`. */
function filling(byte: number, spy?: (array: ArrayBufferView) => void) {
	return <T extends ArrayBufferView>(array: T): T => {
		spy?.(array);
		new Uint8Array(array.buffer, array.byteOffset, array.byteLength).fill(byte);
		return array;
	};
}

describe('randomKey()', () => {
	test('uses crypto.randomUUID when present', () => {
		const spy = vi.fn();
		expect(randomKey({randomUUID: () => '5a0c6e4e-9f5b-4c43-9b3c-0e6a0d1f7a21', getRandomValues: filling(0, spy)})).toBe('5a0c6e4e-9f5b-4c43-9b3c-0e6a0d1f7a21');
		expect(spy).not.toHaveBeenCalled();
	});

	test('makes a v4 UUID from getRandomValues when randomUUID is missing', () => {
		expect(randomKey({getRandomValues: filling(0x00)})).toBe('00000000-0000-4000-8000-000000000000');
		expect(randomKey({getRandomValues: filling(0xff)})).toBe('ffffffff-ffff-4fff-bfff-ffffffffffff');
		const key = randomKey({getRandomValues: array => crypto.getRandomValues(array)});
		expect(key).toMatch(V4);
	});

	test('asks getRandomValues for 16 bytes', () => {
		const spy = vi.fn();
		randomKey({getRandomValues: filling(0xab, spy)});
		expect(spy).toHaveBeenCalledTimes(1);
		expect((spy.mock.calls[0]![0] as Uint8Array).byteLength).toBe(16);
	});

	test('gives distinct keys', () => {
		const keys = new Set(Array.from({length: 1000}, () => randomKey({getRandomValues: array => crypto.getRandomValues(array)})));
		expect(keys.size).toBe(1000);
	});

	test('throws KeyGenerationError (NO_SECURE_RANDOM) with neither, and never uses Math.random', () => {
		const random = vi.spyOn(Math, 'random');
		try {
			expect(() => randomKey({})).toThrow(KeyGenerationError);
			expect(() => randomKey({})).toThrow(expect.objectContaining({code: 'NO_SECURE_RANDOM', name: 'KeyGenerationError'}) as Error);
			expect(random).not.toHaveBeenCalled();
		} finally {
			random.mockRestore();
		}
	});

	test('uses the global crypto by default', () => {
		expect(randomKey()).toMatch(V4);
	});
});

describe('checkKey() and formatKey()', () => {
	test('accepts 1 to 255 visible ASCII characters', () => {
		expect(checkKey('order-42:a')).toBe('order-42:a');
		expect(checkKey('k'.repeat(255))).toBe('k'.repeat(255));
	});

	test.each(['', 'with space', 'naïve', 'k'.repeat(256), 42, undefined])('refuses %j from generateKey', key => {
		expect(() => checkKey(key)).toThrow(TypeError);
		expect(() => checkKey(key)).toThrow(/`generateKey`/);
	});

	test('raw sends the key as it is', () => {
		expect(formatKey('abc', 'raw')).toBe('abc');
	});

	test('sf-string quotes the key and escapes quotes and backslashes (RFC 8941)', () => {
		expect(formatKey('abc', 'sf-string')).toBe('"abc"');
		expect(formatKey('a"b\\c', 'sf-string')).toBe(String.raw`"a\"b\\c"`);
	});
});

describe('keys on the wire', () => {
	beforeEach(() => {
		vi.useFakeTimers();
	});
	afterEach(() => {
		vi.useRealTimers();
		vi.unstubAllGlobals();
	});

	test('sends the key from crypto.randomUUID', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const client = createClient({store: testStore()});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		await drive(intent.send());

		expect(intent.key).toMatch(V4);
		expect(seen[0]!.key).toBe(intent.key);
	});

	test('sends a getRandomValues v4 key where randomUUID is missing (insecure origins)', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		vi.stubGlobal('crypto', {getRandomValues: filling(0x11)});
		const store = testStore();
		// An insecure origin has no crypto.subtle either: the documented fallback fingerprints.
		const client = createClient({store, sha256});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		await drive(intent.send());

		expect(intent.key).toBe('11111111-1111-4111-9111-111111111111');
		expect(seen[0]!.key).toBe(intent.key);
	});

	test('intent() rejects with KeyGenerationError when there is no secure random source, storing nothing', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		vi.stubGlobal('crypto', undefined);
		const store = testStore();
		const client = createClient({store, sha256});

		await expect(client.intent('order', {url: URL_ORDERS, json: {}})).rejects.toMatchObject({name: 'KeyGenerationError', code: 'NO_SECURE_RANDOM'});
		expect(store.writes).toEqual([]);
		expect(seen).toEqual([]);
	});

	test("keyFormat: 'sf-string' sends the key quoted", async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const client = createClient({store: testStore(), keyFormat: 'sf-string'});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		await drive(intent.send());

		expect(seen[0]!.key).toBe(`"${intent.key}"`);
	});

	test('generateKey supplies the key', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const client = createClient({store: testStore(), generateKey: () => 'order-42-attempt'});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		await drive(intent.send());

		expect(intent.key).toBe('order-42-attempt');
		expect(seen[0]!.key).toBe('order-42-attempt');
	});

	test('a generateKey that returns an unusable key makes intent() reject, storing nothing', async () => {
		const store = testStore();
		const client = createClient({store, generateKey: () => 'not a header value\n'});
		await expect(client.intent('order', {url: URL_ORDERS, json: {}})).rejects.toThrow(/`generateKey`/);
		expect(store.writes).toEqual([]);
	});

	test('headerName names the header the key is sent in', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const client = createClient({store: testStore(), headerName: 'X-Idempotency-Key'});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		await drive(intent.send());

		expect(seen[0]!.headers['x-idempotency-key']).toBe(intent.key);
		expect(seen[0]!.key).toBeNull();
	});
});
