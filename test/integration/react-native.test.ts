import {createRequire} from 'node:module';
import {afterAll, afterEach, beforeAll, describe, expect, test, vi} from 'vitest';
import {startContractServer, type ContractServer} from '../server/contract-server.js';

// What Hermes (React Native's engine) lacks, removed before sendonce and ky are loaded:
// ky 1.x once crashed on Hermes over exactly these.
type Sendonce = typeof import('../../src/index.js');
type ReactNative = typeof import('../../src/bindings/react-native.js');
const removed: Array<[object, PropertyKey, PropertyDescriptor | undefined]> = [];
function remove(target: object, name: PropertyKey): void {
	removed.push([target, name, Object.getOwnPropertyDescriptor(target, name)]);
	delete (target as Record<PropertyKey, unknown>)[name];
}

let sendonce: Sendonce;
let native: ReactNative;
let server: ContractServer;
let onArrival: (() => void) | undefined;
const require = createRequire(import.meta.url);

beforeAll(async () => {
	server = await startContractServer({onArrival: () => onArrival?.()});
	const {getRandomValues} = globalThis.crypto;
	// `react-native-get-random-values` provides this much, and no more.
	vi.stubGlobal('crypto', {getRandomValues: getRandomValues.bind(globalThis.crypto)});
	remove(AbortSignal, 'timeout');
	remove(AbortSignal, 'any');
	remove(AbortSignal.prototype, 'throwIfAborted');
	for (const name of ['BroadcastChannel', 'structuredClone', 'indexedDB', 'navigator', 'sessionStorage']) remove(globalThis, name);
	vi.resetModules();
	sendonce = await import('../../src/index.js');
	native = await import('../../src/bindings/react-native.js');
});

afterAll(async () => {
	vi.unstubAllGlobals();
	for (const [target, name, descriptor] of removed.reverse()) if (descriptor) Object.defineProperty(target, name, descriptor);
	await server.close();
});

afterEach(() => {
	server.reset();
	onArrival = undefined;
});

/** The package's official jest mock (v2, the classic API), shimmed for vitest. */
function classicMock() {
	vi.stubGlobal('jest', {fn: vi.fn});
	const mock = require('@react-native-async-storage/async-storage/jest/async-storage-mock') as {
		__INTERNAL_MOCK_STORAGE__: Record<string, string>;
	} & import('../../src/bindings/react-native.js').AsyncStorageLike;
	mock.__INTERNAL_MOCK_STORAGE__ = {};
	return mock;
}

/** v3's official mock (`getMany`/`removeMany`), one fresh database per call. */
async function v3Mock(name: string) {
	const {createAsyncStorage} = await import('async-storage-v3/jest') as {createAsyncStorage: (name: string) => import('../../src/bindings/react-native.js').AsyncStorageLike};
	return createAsyncStorage(name);
}

const options = {retry: {limit: 20, baseDelay: 5, maxDelay: 60}, timeout: 2000} as const;

describe('on a Hermes-like runtime, over AsyncStorage', () => {
	test('keys come from getRandomValues: a v4 UUID', async () => {
		const client = sendonce.createClient({...options, sha256: native.sha256, store: native.asyncStorageStore(classicMock())});
		const intent = await client.intent('order', {url: `${server.url}/orders`, json: {order: 'rn-0'}});
		expect(intent.key).toMatch(/^[\da-f]{8}-[\da-f]{4}-4[\da-f]{3}-[89ab][\da-f]{3}-[\da-f]{12}$/);
	});

	test('without any secure random source, intent() names the import to add', async () => {
		vi.stubGlobal('crypto', {});
		try {
			const client = sendonce.createClient({...options, sha256: native.sha256, store: native.asyncStorageStore(classicMock())});
			await expect(client.intent('order', {url: `${server.url}/orders`, json: {order: 'rn-x'}})).rejects.toThrow(/react-native-get-random-values/);
		} finally {
			vi.stubGlobal('crypto', {getRandomValues: (array: Uint8Array) => globalThis.process && require('node:crypto').getRandomValues(array)});
		}
	});

	test('a lost reply is retried with the same key: one effect', async () => {
		const storage = classicMock();
		const client = sendonce.createClient({...options, sha256: native.sha256, store: native.asyncStorageStore(storage)});
		server.faults.push({type: 'lose-reply'});
		const intent = await client.intent('order', {url: `${server.url}/orders`, json: {order: 'rn-1'}});

		expect(await intent.send()).toMatchObject({status: 'succeeded', replayed: true, attempts: 2});
		expect(server.effects.get('rn-1')).toBe(1);
		expect(server.keys).toEqual([intent.key, intent.key]);
		// The settled record is deleted just after the result.
		await expect.poll(() => Object.keys(storage.__INTERNAL_MOCK_STORAGE__)).toEqual([]);
	});

	test('a slow first attempt answered with 409s while it runs: one effect', async () => {
		// Forty jittered retries (0–60 ms each) outlast the 250 ms of work left beyond any doubt.
		const client = sendonce.createClient({...options, retry: {...options.retry, limit: 40}, sha256: native.sha256, timeout: 50, store: native.asyncStorageStore(await v3Mock('rn-409'))});
		server.faults.push({type: 'slow', ms: 300});
		const intent = await client.intent('order', {url: `${server.url}/orders`, json: {order: 'rn-2'}});

		expect(await intent.send()).toMatchObject({status: 'succeeded', replayed: true});
		expect(server.requests.map(request => request.outcome)).toContain(409);
		expect(server.effects.get('rn-2')).toBe(1);
	});

	test('an app killed mid-request resumes after restart with the same key: one effect', async () => {
		const storage = classicMock();
		const first = sendonce.createClient({...options, sha256: native.sha256, store: native.asyncStorageStore(storage)});
		let disk: Record<string, string> = {};
		// The disk as it is when the request reaches the server: the app dies right after.
		onArrival = () => {
			disk = structuredCloneOf(storage.__INTERNAL_MOCK_STORAGE__);
			onArrival = undefined;
		};

		const intent = await first.intent('checkout', {url: `${server.url}/orders`, json: {order: 'rn-3'}});
		await intent.send();
		// The first app's last step (the delete) done, its disk goes back to what it was when it died.
		await expect.poll(() => Object.keys(storage.__INTERNAL_MOCK_STORAGE__)).toEqual([]);
		storage.__INTERNAL_MOCK_STORAGE__ = disk;
		expect(JSON.parse(disk['sendonce:intent:checkout']!)).toMatchObject({key: intent.key, state: 'sending', attempts: 1});

		const restarted = sendonce.createClient({...options, sha256: native.sha256, store: native.asyncStorageStore(storage)});
		// What a form shows on the next launch: the request the user sent, read back from the disk.
		expect((await restarted.list()).map(stored => [stored.key, stored.snapshot.request])).toEqual([[intent.key, {url: `${server.url}/orders`, method: 'POST', json: {order: 'rn-3'}, headers: {'content-type': 'application/json'}}]]);
		expect(await restarted.resume()).toMatchObject([{status: 'succeeded', key: intent.key, replayed: true}]);
		expect(server.keys).toEqual([intent.key, intent.key]);
		expect(server.effects.get('rn-3')).toBe(1);
	});

	test('why an intent was left unresolved survives a restart: AsyncStorage keeps it with the record', async () => {
		const storage = classicMock();
		const store = native.asyncStorageStore(storage);
		const first = sendonce.createClient({...options, retry: {limit: 2, baseDelay: 1, maxDelay: 1}, sha256: native.sha256, store});
		server.faults.push({type: 'error-before', status: 503}, {type: 'error-before', status: 503});
		const result = await first.send('order', {url: `${server.url}/orders`, json: {order: 'rn-5'}, headers: {'content-type': 'application/json'}});
		expect(result).toMatchObject({status: 'unresolved', reason: 'exhausted', response: {status: 503}});

		const restarted = sendonce.createClient({...options, sha256: native.sha256, store: native.asyncStorageStore(storage)});
		const found = await restarted.get('order');
		expect(found?.result).toMatchObject({status: 'unresolved', key: result.key, reason: 'exhausted', response: {status: 503}, attempts: 2, mayHaveBeenSent: true});
		expect(found?.snapshot.request).toEqual({url: `${server.url}/orders`, method: 'POST', json: {order: 'rn-5'}, headers: {'content-type': 'application/json'}});

		// What `useIntent` (React Native uses sendonce/react's) gives a form on the next launch.
		const {IntentObserver} = await import('../../src/bindings/intent-observer.js');
		const observer = new IntentObserver(sendonce.createClient({...options, sha256: native.sha256, store: native.asyncStorageStore(storage)}), 'order');
		const unsubscribe = observer.subscribe(() => undefined);
		await expect.poll(() => observer.getView().state).toBe('unresolved');
		expect(observer.getView()).toMatchObject({request: {json: {order: 'rn-5'}}, result: {reason: 'exhausted', response: {status: 503}}});
		unsubscribe();
	});

	test('a full disk (SQLITE_FULL) is a StoreError STORE_QUOTA from intent(), and nothing is sent', async () => {
		const storage = await v3Mock('rn-full');
		const full = {
			...storage,
			async setItem() {
				throw new Error('database or disk is full (code 13 SQLITE_FULL)');
			},
		};
		const client = sendonce.createClient({...options, sha256: native.sha256, store: native.asyncStorageStore(full)});
		await expect(client.intent('order', {url: `${server.url}/orders`, json: {order: 'rn-4'}})).rejects.toMatchObject({name: 'StoreError', code: 'STORE_QUOTA'});
		expect(server.requests).toHaveLength(0);
	});

	test('keys are prefixed, and clear() leaves the app\'s own keys alone', async () => {
		const storage = await v3Mock('rn-prefix');
		await storage.setItem('user-settings', '{"theme":"dark"}');
		const client = sendonce.createClient({...options, sha256: native.sha256, store: native.asyncStorageStore(storage)});
		await client.intent('order', {url: `${server.url}/orders`, json: {order: 'rn-5'}, headers: {'content-type': 'application/json'}});

		expect([...await storage.getAllKeys()].sort()).toEqual(['sendonce:intent:order', 'user-settings']);
		await client.clear();
		expect(await storage.getAllKeys()).toEqual(['user-settings']);
	});

	test('isOnline false: waits without spending attempts, then sends once it says online', async () => {
		let online = false;
		const events: string[] = [];
		const client = sendonce.createClient({
			...options,
			sha256: native.sha256,
			retry: {maxDelay: 20_000},
			store: native.asyncStorageStore(await v3Mock('rn-offline')),
			isOnline: () => online,
			onEvent: event => events.push(event.type),
		});
		const intent = await client.intent('order', {url: `${server.url}/orders`, json: {order: 'rn-6'}});
		vi.useFakeTimers();
		try {
			const sent = intent.send();
			await vi.waitFor(() => {
				expect(events).toContain('wait-online');
			});
			await vi.advanceTimersByTimeAsync(5000);
			expect(server.requests).toHaveLength(0);
			expect(intent.attempts).toBe(0);
			online = true;
			await vi.advanceTimersByTimeAsync(1000);
			vi.useRealTimers();
			expect(await sent).toMatchObject({status: 'succeeded', attempts: 1});
		} finally {
			vi.useRealTimers();
		}
	});

	test('resumeOnAppStateChange resumes when the app becomes active, and stops when told', async () => {
		const listeners: Array<(state: string) => void> = [];
		const appState = {
			addEventListener(_type: 'change', listener: (state: string) => void) {
				listeners.push(listener);
				return {remove: () => listeners.splice(listeners.indexOf(listener), 1)};
			},
		};
		const resume = vi.fn(async () => []);
		const stop = native.resumeOnAppStateChange({resume}, appState);
		for (const listener of listeners) listener('background');
		for (const listener of listeners) listener('active');
		expect(resume).toHaveBeenCalledTimes(1);
		stop();
		expect(listeners).toHaveLength(0);
	});
});

function structuredCloneOf<T>(value: T): T {
	return JSON.parse(JSON.stringify(value)) as T;
}
