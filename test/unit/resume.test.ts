import {HttpResponse} from 'msw';
import {afterEach, beforeEach, describe, expect, test, vi} from 'vitest';
import {createClient, type ClientOptions} from '../../src/index.js';
import type {IntentRecord} from '../../src/core/record.js';
import {drive, eventLog, FAST, status, testStore, URL_ORDERS, useMsw, type TestStore} from './helpers.js';

const {api} = useMsw();

beforeEach(() => {
	vi.useFakeTimers();
});
afterEach(() => {
	vi.useRealTimers();
});

/** Leaves an intent in `state` in `store`, as a page that closed at that moment would. */
async function leftBehind(store: TestStore, scope: string, change: Partial<IntentRecord> = {}): Promise<IntentRecord> {
	const client = createClient({store});
	await client.intent(scope, {url: URL_ORDERS, json: {scope}});
	const record = {...store.record(scope)!, ...change};
	await store.set(`intent:${scope}`, record);
	return record;
}

const reload = (store: TestStore, options: ClientOptions = {}) => createClient({...FAST, store, ...options});

describe('resume()', () => {
	test('sends every stored pending and sending intent with its stored key and body', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const store = testStore();
		const pending = await leftBehind(store, 'a');
		const sending = await leftBehind(store, 'b', {state: 'sending', attempts: 1});
		const results = await drive(reload(store).resume());

		expect(results.map(result => [result.key, result.status]).sort()).toEqual([[pending.key, 'succeeded'], [sending.key, 'succeeded']].sort());
		expect(seen.map(request => [request.key, request.body]).sort()).toEqual([[pending.key, '{"scope":"a"}'], [sending.key, '{"scope":"b"}']].sort());
		expect(results.find(result => result.key === sending.key)).toMatchObject({attempts: 2});
		expect(store.records()).toEqual([]);
	});

	test('leaves unresolved and expired intents alone', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const store = testStore();
		await leftBehind(store, 'a', {state: 'unresolved', attempts: 5, reason: 'exhausted'});
		await leftBehind(store, 'b', {state: 'expired', attempts: 1});
		const results = await drive(reload(store).resume());

		expect(results).toEqual([]);
		expect(seen).toEqual([]);
		expect(store.records().map(record => record.state).sort()).toEqual(['expired', 'unresolved']);
	});

	test('does not send an interrupted intent past its window', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const store = testStore();
		const record = await leftBehind(store, 'a', {state: 'sending', attempts: 1});
		vi.setSystemTime(record.expiresAt);
		const results = await drive(reload(store).resume());

		expect(seen).toEqual([]);
		expect(results).toEqual([{status: 'expired', key: record.key, attempts: 1, mayHaveBeenSent: true}]);
		expect(store.record('a')?.state).toBe('expired');
	});

	test('concurrent resume() calls send each intent once', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const store = testStore();
		await leftBehind(store, 'a');
		await leftBehind(store, 'b');
		const client = reload(store);
		await drive(Promise.all([client.resume(), client.resume()]));

		expect(seen).toHaveLength(2);
	});

	test('a resume() that joined another\'s intents hears that one\'s store error, never an empty success', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const store = testStore();
		await leftBehind(store, 'a');
		await leftBehind(store, 'b');
		const client = reload(store);
		const set = store.set.bind(store);
		store.set = async () => {
			throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
		};

		const outcomes = await drive(Promise.allSettled([client.resume(), client.resume()]));

		expect(outcomes.map(outcome => outcome.status)).toEqual(['rejected', 'rejected']);
		expect(seen).toEqual([]);
		store.set = set;
		expect(store.records().map(record => record.state)).toEqual(['pending', 'pending']);
	});

	test('a resumed intent that keeps failing ends unresolved and stays stored', async () => {
		api(status(503));
		const store = testStore();
		const record = await leftBehind(store, 'a', {state: 'sending', attempts: 1});
		const [result] = await drive(reload(store, {retry: {limit: 2, baseDelay: 10, maxDelay: 100}}).resume());

		expect(result).toMatchObject({status: 'unresolved', key: record.key, attempts: 3});
		expect(store.record('a')).toMatchObject({state: 'unresolved', attempts: 3});
	});
});

describe('list(), get(), clear(), durable', () => {
	test('list() gives every stored, unsettled intent', async () => {
		const store = testStore();
		const a = await leftBehind(store, 'a');
		const b = await leftBehind(store, 'b', {state: 'unresolved', attempts: 2, reason: 'exhausted'});
		const intents = await reload(store).list();

		expect(intents.map(intent => [intent.key, intent.state]).sort()).toEqual([[a.key, 'pending'], [b.key, 'unresolved']].sort());
	});

	test('get() and list() give the same Intent object for a scope', async () => {
		const store = testStore();
		await leftBehind(store, 'a');
		const client = reload(store);
		const [listed] = await client.list();
		expect(await client.get('a')).toBe(listed);
	});

	test('clear() forgets everything', async () => {
		const store = testStore();
		await leftBehind(store, 'a');
		await leftBehind(store, 'b');
		const client = reload(store);
		await client.clear();

		expect(store.map.size).toBe(0);
		expect(await client.list()).toEqual([]);
	});

	test('a custom store is durable unless it says otherwise', async () => {
		await expect(createClient({store: testStore()}).durable).resolves.toBe(true);
		await expect(createClient({store: {...testStore(), durable: false}}).durable).resolves.toBe(false);
	});
});

describe('invalid records', () => {
	test('are set aside, reported as store-error and never sent', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const store = testStore();
		const record = await leftBehind(store, 'a');
		await store.set('intent:a', {...record, v: 0, attempts: -1});
		const log = eventLog();
		const client = reload(store, {onEvent: log.onEvent});

		expect(await client.get('a')).toBeUndefined();
		expect(await drive(client.resume())).toEqual([]);
		expect(seen).toEqual([]);
		expect(log.of('store-error')).toMatchObject([{scope: 'a', error: {name: 'StoreError', code: 'STORE_CORRUPT'}}]);
		expect(store.map.has('intent:a')).toBe(false);
		expect([...store.map.keys()]).toEqual([expect.stringContaining('intent:a') as unknown]);
	});
});
