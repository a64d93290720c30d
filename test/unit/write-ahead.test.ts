import {HttpResponse} from 'msw';
import {afterEach, beforeEach, describe, expect, test, vi} from 'vitest';
import {createClient, StoreError} from '../../src/index.js';
import type {IntentRecord} from '../../src/core/record.js';
import {drive, FAST, status, testStore, URL_ORDERS, useMsw, type TestStore} from './helpers.js';

const {api} = useMsw();

beforeEach(() => {
	vi.useFakeTimers();
});
afterEach(() => {
	vi.useRealTimers();
});

/** Answers with `replies` in order, noting what the store held for `scope` as each request arrived. */
function recordingApi(store: TestStore, scope: string, ...replies: Response[]) {
	const atArrival: Array<IntentRecord | undefined> = [];
	const seen = api(...replies.map(reply => () => {
		atArrival.push(structuredClone(store.record(scope)));
		return reply;
	}));
	return {seen, atArrival};
}

describe('write-ahead', () => {
	test('a new intent is stored, pending, before intent() resolves', async () => {
		const store = testStore();
		const client = createClient({...FAST, store, window: 60_000});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {order: 'a-1'}});

		expect(store.record('order')).toMatchObject({
			v: 1,
			key: intent.key,
			scope: 'order',
			state: 'pending',
			request: {url: URL_ORDERS, method: 'POST', headers: {'content-type': 'application/json'}, body: '{"order":"a-1"}'},
			fingerprint: expect.stringMatching(/^[\da-f]{64}$/) as unknown,
			attempts: 0,
			createdAt: Date.now(),
			expiresAt: Date.now() + 60_000,
			updatedAt: Date.now(),
		});
		expect(intent).toMatchObject({state: 'pending', attempts: 0, mayHaveBeenSent: false, createdAt: Date.now(), expiresAt: Date.now() + 60_000});
	});

	test('the store says sending, with the attempt counted, when each request reaches the server', async () => {
		const store = testStore();
		const {seen, atArrival} = recordingApi(store, 'order', status(503), status(503), HttpResponse.json({ok: true}));
		const client = createClient({...FAST, store});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {order: 'a-1'}});
		await drive(intent.send());

		expect(seen).toHaveLength(3);
		expect(atArrival.map(record => [record?.state, record?.attempts, record?.key])).toEqual([
			['sending', 1, intent.key],
			['sending', 2, intent.key],
			['sending', 3, intent.key],
		]);
	});

	test('the stored body is the body sent', async () => {
		const store = testStore();
		const {seen, atArrival} = recordingApi(store, 'order', HttpResponse.json({ok: true}));
		const client = createClient({...FAST, store});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {b: [1, 2], a: 'x'}});
		await drive(intent.send());

		expect(atArrival[0]!.request.body).toBe(seen[0]!.body);
	});

	test('a succeeded intent is deleted from the store', async () => {
		const store = testStore();
		api(HttpResponse.json({ok: true}));
		const client = createClient({...FAST, store});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		await drive(intent.send());

		expect(store.records()).toEqual([]);
		expect(await client.get('order')).toBeUndefined();
		expect(intent.state).toBe('succeeded');
	});

	test('a settled intent goes from sending straight to deleted: its absence is the settled state', async () => {
		const store = testStore();
		api(status(422));
		const client = createClient({...FAST, store});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		await drive(intent.send());

		const states = store.writes.map(write => (write.value as IntentRecord).state);
		expect(states.filter((state, index) => state !== states[index - 1])).toEqual(['pending', 'sending']);
		expect(store.records()).toEqual([]);
		expect(intent.state).toBe('failed');
	});

	test('a failed intent is deleted from the store', async () => {
		const store = testStore();
		api(status(400));
		const client = createClient({...FAST, store});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		expect(await drive(intent.send())).toMatchObject({status: 'failed'});

		expect(store.records()).toEqual([]);
		expect(intent.mayHaveBeenSent).toBe(false);
	});

	test('an unresolved intent stays stored, with its reason and attempts', async () => {
		const store = testStore();
		api(status(503));
		const client = createClient({store, retry: {limit: 2, baseDelay: 10, maxDelay: 100}});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		await drive(intent.send());

		expect(store.record('order')).toMatchObject({key: intent.key, state: 'unresolved', reason: 'exhausted', attempts: 2});
		expect((await client.get('order'))?.key).toBe(intent.key);
	});

	test('a new client on the same store finds the unresolved intent and resends it with the same key', async () => {
		const store = testStore();
		const seen = api(status(503), status(503), HttpResponse.json({ok: true}));
		const before = createClient({store, retry: {limit: 2, baseDelay: 10, maxDelay: 100}});
		const first = await before.intent('order', {url: URL_ORDERS, json: {}});
		await drive(first.send());

		const after = createClient({store, retry: {limit: 2, baseDelay: 10, maxDelay: 100}});
		const found = await after.get('order');
		expect(found?.key).toBe(first.key);
		expect(found?.attempts).toBe(2);
		expect(await drive(found!.send())).toMatchObject({status: 'succeeded', attempts: 3});
		expect(seen.map(request => request.key)).toEqual([first.key, first.key, first.key]);
	});

	test('nothing is sent when the attempt cannot be written first', async () => {
		const store = testStore();
		const seen = api(HttpResponse.json({ok: true}));
		const client = createClient({...FAST, store});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		const set = store.set.bind(store);
		store.set = async (id, value) => {
			if ((value as IntentRecord).state === 'sending') throw new Error('disk I/O error');
			return set(id, value);
		};

		await expect(drive(intent.send())).rejects.toThrow(StoreError);
		expect(seen).toEqual([]);
	});

	test('a full store makes intent() reject with STORE_QUOTA, and nothing is sent', async () => {
		const store = testStore();
		const seen = api(HttpResponse.json({ok: true}));
		store.set = async () => {
			throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
		};
		const client = createClient({...FAST, store});

		await expect(client.intent('order', {url: URL_ORDERS, json: {}})).rejects.toMatchObject({name: 'StoreError', code: 'STORE_QUOTA'});
		expect(seen).toEqual([]);
	});
});

describe('secrets never reach the store', () => {
	test('client headers are sent on every attempt and never stored', async () => {
		const store = testStore();
		const seen = api(status(503), status(503), HttpResponse.json({ok: true}));
		const client = createClient({
			...FAST,
			store,
			headers: {authorization: 'Bearer s3cret-token', cookie: 'session=c00kie', 'x-api-key': 'ap1-key'},
		});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		const sending = intent.send();
		await drive(sending);

		expect(seen.map(request => request.headers.authorization)).toEqual(['Bearer s3cret-token', 'Bearer s3cret-token', 'Bearer s3cret-token']);
		const everythingWritten = JSON.stringify(store.writes);
		for (const secret of ['s3cret-token', 'c00kie', 'ap1-key']) expect(everythingWritten).not.toContain(secret);
	});

	test('only content-type, accept and persistHeaders are stored; other request headers are sent from this page', async () => {
		const store = testStore();
		const seen = api(status(503));
		const client = createClient({store, retry: {limit: 2, baseDelay: 10, maxDelay: 100}, persistHeaders: ['X-Tenant']});
		const intent = await client.intent('order', {
			url: URL_ORDERS,
			json: {},
			headers: {Accept: 'application/json', 'X-Tenant': 't1', Authorization: 'Bearer s3cret-token', 'X-Api-Key': 'ap1-key'},
		});
		await drive(intent.send());

		expect(store.record('order')?.request.headers).toEqual({'content-type': 'application/json', accept: 'application/json', 'x-tenant': 't1'});
		expect(JSON.stringify(store.writes)).not.toMatch(/s3cret-token|ap1-key/);
		expect(seen.map(request => [request.headers.authorization, request.headers['x-api-key']])).toEqual([
			['Bearer s3cret-token', 'ap1-key'], ['Bearer s3cret-token', 'ap1-key'],
		]);
	});

	test('after a reload, the stored intent is resent with the client headers of the new page', async () => {
		const store = testStore();
		const seen = api(status(503), HttpResponse.json({ok: true}));
		const before = createClient({store, retry: 1, headers: {authorization: 'Bearer old'}});
		const first = await before.intent('order', {url: URL_ORDERS, json: {}});
		await drive(first.send());

		const after = createClient({store, retry: 1, headers: {authorization: 'Bearer new'}});
		const found = await after.get('order');
		await drive(found!.send());
		expect(seen.map(request => [request.key, request.headers.authorization])).toEqual([[first.key, 'Bearer old'], [first.key, 'Bearer new']]);
	});
});
