import {HttpResponse} from 'msw';
import {afterEach, beforeEach, describe, expect, test, vi} from 'vitest';
import {createClient, isSendOnceError, UnresolvedIntentError, type ClientOptions, type Intent} from '../../src/index.js';
import type {IntentRecord} from '../../src/core/record.js';
import {drive, eventLog, flush, status, testStore, until, URL_ORDERS, useMsw, type TestStore} from './helpers.js';

const {api} = useMsw();

beforeEach(() => {
	vi.useFakeTimers();
});
afterEach(() => {
	vi.useRealTimers();
});

const body1 = {url: URL_ORDERS, json: {message: 'first'}};
const body2 = {url: URL_ORDERS, json: {message: 'edited'}};

function setUp(options: ClientOptions = {}, store: TestStore = testStore()) {
	return {store, client: createClient({store, retry: {limit: 2, baseDelay: 10, maxDelay: 100}, ...options})};
}

async function expectUnresolvedIntentError(creating: Promise<Intent>, previous: {key: string}) {
	const error = await creating.then(() => undefined, (error: unknown) => error);
	expect(error).toBeInstanceOf(UnresolvedIntentError);
	expect(isSendOnceError(error) && error.code).toBe('UNRESOLVED_INTENT');
	expect((error as UnresolvedIntentError).previous.key).toBe(previous.key);
	return error as UnresolvedIntentError;
}

describe('nothing stored, or a settled intent', () => {
	test('nothing stored: a new intent with a new key', async () => {
		const {store, client} = setUp();
		const a = await client.intent('contact', body1);
		const b = await client.intent('other', body1);

		expect(a.key).not.toBe(b.key);
		expect(store.record('contact')?.key).toBe(a.key);
	});

	test('after a success, the same body is a new intent with a new key', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const {client} = setUp();
		const first = await client.intent('contact', body1);
		await drive(first.send());
		const second = await client.intent('contact', body1);

		expect(second).not.toBe(first);
		expect(second.key).not.toBe(first.key);
		expect(second.state).toBe('pending');
		await drive(second.send());
		expect(seen.map(request => request.key)).toEqual([first.key, second.key]);
	});

	test('after a success, another body is a new intent with a new key', async () => {
		api(HttpResponse.json({ok: true}));
		const {client} = setUp();
		const first = await client.intent('contact', body1);
		await drive(first.send());
		const second = await client.intent('contact', body2);
		expect(second.key).not.toBe(first.key);
	});

	test('after a refusal, the same body is a new intent with a new key', async () => {
		api(status(422));
		const {client} = setUp();
		const first = await client.intent('contact', body1);
		await drive(first.send());
		const second = await client.intent('contact', body1);
		expect(second.key).not.toBe(first.key);
	});

	test('a settled record left in the store (a crash after the outcome) is not reused', async () => {
		const {store, client} = setUp();
		const stale = await client.intent('contact', body1);
		const record = store.record('contact')!;
		const {client: reloaded} = setUp({}, store);
		await store.set('intent:contact', {...record, state: 'succeeded', attempts: 1} satisfies IntentRecord);

		const fresh = await reloaded.intent('contact', body1);
		expect(fresh.key).not.toBe(stale.key);
		expect(store.record('contact')).toMatchObject({key: fresh.key, state: 'pending'});
	});
});

describe('unsettled, never sent', () => {
	test('the same body gives the stored intent, same key', async () => {
		const {store, client} = setUp();
		const first = await client.intent('contact', body1);
		const again = await client.intent('contact', {url: URL_ORDERS, json: {message: 'first'}});

		expect(again).toBe(first);
		expect(store.records()).toHaveLength(1);
	});

	test('the same body after a reload gives the stored intent, same key', async () => {
		const {store, client} = setUp();
		const first = await client.intent('contact', body1);
		const {client: reloaded} = setUp({}, store);
		const again = await reloaded.intent('contact', body1);

		expect(again.key).toBe(first.key);
		expect(again.state).toBe('pending');
	});

	test('another body replaces it with a new key', async () => {
		const {store, client} = setUp();
		const first = await client.intent('contact', body1);
		const second = await client.intent('contact', body2);

		expect(second.key).not.toBe(first.key);
		expect(store.records()).toHaveLength(1);
		expect(store.record('contact')).toMatchObject({key: second.key, request: {body: '{"message":"edited"}'}});
	});

	test('another body after a reload replaces it with a new key', async () => {
		const {store, client} = setUp();
		const first = await client.intent('contact', body1);
		const {client: reloaded} = setUp({}, store);
		const second = await reloaded.intent('contact', body2);

		expect(second.key).not.toBe(first.key);
		expect(store.record('contact')?.key).toBe(second.key);
	});

	test('an intent aborted before its first attempt counts as never sent', async () => {
		const {client} = setUp();
		const first = await client.intent('contact', body1);
		const controller = new AbortController();
		controller.abort();
		await first.send({signal: controller.signal});
		const second = await client.intent('contact', body2);
		expect(second.key).not.toBe(first.key);
	});

	test('a replaced intent never sends, and never overwrites its replacement', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const {store, client} = setUp();
		const first = await client.intent('contact', body1);
		const second = await client.intent('contact', body2);
		await drive(first.send());

		expect(seen.map(request => request.key)).not.toContain(first.key);
		expect(store.record('contact')).toMatchObject({key: second.key, state: 'pending'});
	});
});

describe('unsettled, sent at least once', () => {
	async function sentOnce(store?: TestStore) {
		api(status(503));
		const {store: used, client} = setUp({}, store);
		const first = await client.intent('contact', body1);
		await drive(first.send());
		expect(first.state).toBe('unresolved');
		return {store: used, client, first};
	}

	test('the same body gives the stored intent, same key', async () => {
		const {client, first} = await sentOnce();
		expect(await client.intent('contact', body1)).toBe(first);
	});

	test('the same body after a reload gives the stored intent, same key and attempts', async () => {
		const {store, first} = await sentOnce();
		const {client: reloaded} = setUp({}, store);
		const again = await reloaded.intent('contact', body1);
		expect(again.key).toBe(first.key);
		expect(again.attempts).toBe(2);
		expect(again.mayHaveBeenSent).toBe(true);
	});

	test('another body throws UnresolvedIntentError carrying the stored intent as .previous', async () => {
		const {store, client, first} = await sentOnce();
		const before = structuredClone(store.map);
		const error = await expectUnresolvedIntentError(client.intent('contact', body2), first);

		expect(error.previous).toBe(first);
		expect(store.map).toEqual(before);
	});

	test('another body after a reload throws UnresolvedIntentError too', async () => {
		const {store, first} = await sentOnce();
		const {client: reloaded} = setUp({}, store);
		const error = await expectUnresolvedIntentError(reloaded.intent('contact', body2), first);
		expect(error.previous.attempts).toBe(2);
		expect(store.record('contact')?.key).toBe(first.key);
	});

	test('another body with replace: true is a new intent with a new key', async () => {
		const {store, client, first} = await sentOnce();
		const seen = api(HttpResponse.json({ok: true}));
		const second = await client.intent('contact', body2, {replace: true});

		expect(second.key).not.toBe(first.key);
		expect(store.record('contact')).toMatchObject({key: second.key, state: 'pending', attempts: 0});
		await drive(second.send());
		expect(seen.map(request => [request.key, request.body])).toEqual([[second.key, '{"message":"edited"}']]);
	});

	test('the same body with replace: true is a new intent with a new key', async () => {
		const {client, first} = await sentOnce();
		const second = await client.intent('contact', body1, {replace: true});
		expect(second.key).not.toBe(first.key);
	});

	test('an intent whose attempt is in flight is sent at least once', async () => {
		const seen = api(async () => new Promise<Response>(() => undefined));
		const {client} = setUp();
		const first = await client.intent('contact', body1);
		void first.send();
		await until(() => seen.length === 1, 'the first request');

		expect(await client.intent('contact', body1)).toBe(first);
		await expectUnresolvedIntentError(client.intent('contact', body2), first);
	});

	test('an expired intent that was sent is not silently replaced', async () => {
		api(status(503));
		const {client} = setUp({window: 1000});
		const first = await client.intent('contact', body1);
		await drive(first.send());
		await vi.advanceTimersByTimeAsync(1000);
		expect(await drive(first.send())).toMatchObject({status: 'expired'});
		await expectUnresolvedIntentError(client.intent('contact', body2), first);
	});
});

describe('concurrency', () => {
	test('two concurrent intent() calls for one scope and one body give one intent', async () => {
		const {store, client} = setUp();
		const [a, b] = await Promise.all([client.intent('contact', body1), client.intent('contact', {url: URL_ORDERS, json: {message: 'first'}})]);

		expect(b).toBe(a);
		expect(store.writes).toHaveLength(1);
	});

	test('many concurrent intent() calls for one scope and one body give one intent', async () => {
		const {store, client} = setUp();
		const intents = await Promise.all(Array.from({length: 10}, async () => client.intent('contact', body1)));

		expect(new Set(intents).size).toBe(1);
		expect(new Set(store.writes.map(write => (write.value as IntentRecord).key)).size).toBe(1);
	});

	test('a double press against a server that answers faster than the hash sends once', async () => {
		const keys: Array<string | null> = [];
		const client = createClient({
			store: 'memory',
			fetch: async (input: RequestInfo | URL, init?: RequestInit) => {
				keys.push(new Request(input, init).headers.get('idempotency-key'));
				return new Response('{}', {status: 201});
			},
		});
		const press = async () => (await client.intent('contact', body1)).send();
		const [first, second] = await Promise.all([press(), press()]);

		expect(keys).toHaveLength(1);
		expect(second).toEqual(first);
	});

	test('concurrent intent() calls for different scopes give different intents', async () => {
		const {store, client} = setUp();
		const [a, b] = await Promise.all([client.intent('a', body1), client.intent('b', body1)]);
		expect(a.key).not.toBe(b.key);
		expect(store.records()).toHaveLength(2);
	});
});

describe('discard()', () => {
	test('forgets the intent: the store is empty and the scope starts afresh', async () => {
		api(status(503));
		const {store, client} = setUp();
		const first = await client.intent('contact', body1);
		await drive(first.send());
		await first.discard();

		expect(store.records()).toEqual([]);
		expect(await client.get('contact')).toBeUndefined();
		expect(await client.list()).toEqual([]);
		const second = await client.intent('contact', body2);
		expect(second.key).not.toBe(first.key);
	});

	test('stops a send waiting to retry: no further request, nothing stored', async () => {
		const seen = api(status(503));
		const log = eventLog();
		const {store, client} = setUp({onEvent: log.onEvent, retry: {limit: 5, baseDelay: 1000, maxDelay: 1000}});
		const intent = await client.intent('contact', body1);
		const sending = intent.send();
		await until(() => log.of('retry').length === 1, 'the retry wait');
		await intent.discard();
		await drive(sending);
		await vi.advanceTimersByTimeAsync(10_000);
		await flush();

		expect(seen).toHaveLength(1);
		expect(store.records()).toEqual([]);
		expect(intent.snapshot.discarded).toBe(true);
	});

	test('discarding a replaced intent leaves its replacement stored', async () => {
		const {store, client} = setUp();
		const first = await client.intent('contact', body1);
		const second = await client.intent('contact', body2);
		await first.discard();
		expect(store.record('contact')?.key).toBe(second.key);
	});

	test('is idempotent', async () => {
		const {store, client} = setUp();
		const intent = await client.intent('contact', body1);
		await intent.discard();
		await intent.discard();
		expect(store.records()).toEqual([]);
	});
});
