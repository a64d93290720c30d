import {afterAll, afterEach, beforeAll, describe, expect, test, vi} from 'vitest';
import {createClient, memoryStore, UnresolvedIntentError, type ClientOptions, type IntentStore, type SendOnceEvent} from '../../src/index.js';
import {startContractServer, type ContractServer} from '../server/contract-server.js';

let server: ContractServer;
let onArrival: ((request: {key: string | undefined; body: string}) => void | Promise<void>) | undefined;
beforeAll(async () => {
	server = await startContractServer({onArrival: async request => onArrival?.(request)});
});
afterAll(async () => server.close());
afterEach(() => {
	server.reset();
	onArrival = undefined;
	vi.useRealTimers();
});

const fast = {store: 'memory', retry: {limit: 5, baseDelay: 1, maxDelay: 5}, timeout: 2000} satisfies ClientOptions;
const orders = () => `${server.url}/orders`;

describe('one effect, whatever the network does', () => {
	test('lost reply after the work: retried with the same key, replayed, one effect', async () => {
		const client = createClient(fast);
		server.faults.push({type: 'lose-reply'});
		const intent = await client.intent('order', {url: orders(), json: {order: 'a-1'}});
		const result = await intent.send();

		expect(result).toMatchObject({status: 'succeeded', replayed: true, attempts: 2});
		expect(server.effects.get('a-1')).toBe(1);
		expect(server.keys).toEqual([intent.key, intent.key]);
	});

	test('502 after the work: retried with the same key and the same bytes, one effect', async () => {
		const client = createClient(fast);
		server.faults.push({type: 'error-after', status: 502});
		const intent = await client.intent('order', {url: orders(), json: {order: 'a-2', items: [1, 2]}});
		const result = await intent.send();

		expect(result).toMatchObject({status: 'succeeded', replayed: true});
		expect(server.effects.get('a-2')).toBe(1);
		expect(server.requests.map(request => request.outcome)).toEqual([502, 201]);
		expect(new Set(server.requests.map(request => request.body)).size).toBe(1);
	});

	test('503 before the work: the retry does the work once', async () => {
		const client = createClient(fast);
		server.faults.push({type: 'error-before', status: 503}, {type: 'drop-before'});
		const intent = await client.intent('order', {url: orders(), json: {order: 'a-3'}});

		expect(await intent.send()).toMatchObject({status: 'succeeded', replayed: false, attempts: 3});
		expect(server.effects.get('a-3')).toBe(1);
	});

	test('slow first attempt, then 409s while it runs: waits, one effect', async () => {
		const client = createClient({...fast, timeout: 100, retry: {limit: 30, baseDelay: 20, maxDelay: 100}});
		server.faults.push({type: 'slow', ms: 400});
		const intent = await client.intent('order', {url: orders(), json: {order: 'a-4'}});
		const result = await intent.send();

		expect(result).toMatchObject({status: 'succeeded', replayed: true});
		expect(server.effects.get('a-4')).toBe(1);
		expect(server.requests.map(request => request.outcome)).toContain(409);
		expect(new Set(server.keys)).toEqual(new Set([intent.key]));
	});

	test('double click: two handlers racing make one intent and one request', async () => {
		const client = createClient(fast);
		const press = async () => {
			const intent = await client.intent('contact-form', {url: orders(), json: {order: 'a-5', message: 'hi'}});
			return intent.send();
		};

		const [first, second] = await Promise.all([press(), press()]);
		expect(first).toEqual(second);
		expect(server.requests).toHaveLength(1);
		expect(server.effects.get('a-5')).toBe(1);
	});

	test('429 with Retry-After: waits as told, then one effect', async () => {
		const client = createClient(fast);
		server.faults.push({type: 'rate-limit', seconds: 0});
		const intent = await client.intent('order', {url: orders(), json: {order: 'a-6'}});

		expect(await intent.send()).toMatchObject({status: 'succeeded', attempts: 2});
		expect(server.effects.get('a-6')).toBe(1);
	});
});

describe('outcomes the app must handle', () => {
	test('a definitive 400 fails after one request and retires the key', async () => {
		const store = memoryStore();
		const client = createClient({...fast, store});
		const intent = await client.intent('order', {url: orders(), json: {order: 'b-1', reject: 'no such product'}});
		const result = await intent.send();

		expect(result).toMatchObject({status: 'failed', response: {status: 400}, data: {reason: 'no such product'}});
		expect(server.requests).toHaveLength(1);
		expect(server.totalEffects).toBe(0);
		expect(await store.list()).toEqual([]);
		const next = await client.intent('order', {url: orders(), json: {order: 'b-1'}});
		expect(next.key).not.toBe(intent.key);
	});

	test('retries exhausted: unresolved and kept; an edited body is refused, the same body resumes the key', async () => {
		const client = createClient({...fast, retry: {limit: 3, baseDelay: 1, maxDelay: 2}});
		server.faults.push({type: 'lose-reply'}, {type: 'error-before'}, {type: 'error-before'});
		const intent = await client.intent('contact-form', {url: orders(), json: {order: 'b-2', message: 'hello'}});
		const result = await intent.send();

		expect(result).toMatchObject({status: 'unresolved', reason: 'exhausted', attempts: 3, mayHaveBeenSent: true});
		expect(intent.state).toBe('unresolved');
		const edited = client.intent('contact-form', {url: orders(), json: {order: 'b-2', message: 'hello again'}});
		await expect(edited).rejects.toBeInstanceOf(UnresolvedIntentError);
		await expect(edited).rejects.toMatchObject({previous: intent});

		const same = await client.intent('contact-form', {url: orders(), json: {message: 'hello', order: 'b-2'}});
		expect(same).toBe(intent);
		expect(await same.send()).toMatchObject({status: 'succeeded', replayed: true, attempts: 4});
		expect(server.effects.get('b-2')).toBe(1);
	});

	test('replace: true sends an edited body as a new action with a new key', async () => {
		const client = createClient({...fast, retry: 1});
		server.faults.push({type: 'lose-reply'});
		const first = await client.intent('contact-form', {url: orders(), json: {order: 'b-3'}});
		expect(await first.send()).toMatchObject({status: 'unresolved'});

		const second = await client.intent('contact-form', {url: orders(), json: {order: 'b-3b'}}, {replace: true});
		expect(second.key).not.toBe(first.key);
		expect(await second.send()).toMatchObject({status: 'succeeded', replayed: false});
		expect(await client.list()).toEqual([]);
	});

	test('abort during an attempt: unresolved, reason aborted, the record stays for a later send', async () => {
		const store = memoryStore();
		const client = createClient({...fast, store});
		const controller = new AbortController();
		onArrival = () => controller.abort();
		server.faults.push({type: 'slow', ms: 200});
		const intent = await client.intent('order', {url: orders(), json: {order: 'b-4'}});
		const result = await intent.send({signal: controller.signal});

		expect(result).toMatchObject({status: 'unresolved', reason: 'aborted', attempts: 1, mayHaveBeenSent: true});
		expect(await store.get('intent:order')).toMatchObject({key: intent.key, state: 'unresolved', reason: 'aborted'});
		onArrival = undefined;
		await vi.waitFor(() => {
			expect(server.effects.get('b-4')).toBe(1);
		});
		expect(await intent.send()).toMatchObject({status: 'succeeded', replayed: true});
		expect(server.effects.get('b-4')).toBe(1);
	});

	test('an exhausted retry budget stops a retry storm against a down backend', async () => {
		const events: SendOnceEvent[] = [];
		const client = createClient({...fast, retry: {limit: 10, baseDelay: 1, maxDelay: 1, budget: 12}, onEvent: event => events.push(event)});
		// Every request fails before the work, as a backend that is down.
		for (let index = 0; index < 30; index++) server.faults.push({type: 'error-before', status: 503});
		const first = await client.intent('one', {url: orders(), json: {order: 'c-1'}});
		const second = await client.intent('two', {url: orders(), json: {order: 'c-2'}});

		expect(await first.send()).toMatchObject({status: 'unresolved', reason: 'budget', attempts: 3});
		expect(await second.send()).toMatchObject({status: 'unresolved', reason: 'budget', attempts: 1});
		expect(server.requests).toHaveLength(4);
		expect(events.filter(event => event.type === 'settled').map(event => event.type === 'settled' && event.reason)).toEqual(['budget', 'budget']);
	});

	test('an intent past its window is never sent: expired, for the app to reconcile', async () => {
		const store = memoryStore();
		const client = createClient({...fast, store, window: 60_000});
		const intent = await client.intent('order', {url: orders(), json: {order: 'c-3'}});
		vi.useFakeTimers({toFake: ['Date']});
		vi.setSystemTime(Date.now() + 60_001);

		expect(await intent.send()).toEqual({status: 'expired', key: intent.key, attempts: 0, mayHaveBeenSent: false});
		expect(await client.resume()).toEqual([]);
		expect(server.requests).toHaveLength(0);
		expect(await store.get('intent:order')).toMatchObject({state: 'expired'});
	});
});

describe('the stored record', () => {
	test('is written before each attempt arrives (write-ahead) and never holds a secret', async () => {
		const store = memoryStore();
		const client = createClient({
			...fast,
			store,
			headers: () => ({authorization: 'Bearer s3cret-token'}),
			persistHeaders: ['x-client-version'],
		});
		const seen: unknown[] = [];
		onArrival = async () => {
			seen.push(await store.get('intent:checkout'));
		};

		server.faults.push({type: 'lose-reply'}, {type: 'error-before'});
		const intent = await client.intent('checkout', {
			url: orders(),
			json: {order: 'd-1'},
			headers: {'x-client-version': '1.2.3', 'x-api-key': 'k3y-secret', accept: 'application/json'},
		});
		expect(await store.get('intent:checkout')).toMatchObject({state: 'pending', attempts: 0, key: intent.key});
		await intent.send();

		expect(seen).toMatchObject([
			{state: 'sending', attempts: 1, key: intent.key},
			{state: 'sending', attempts: 2, key: intent.key},
			{state: 'sending', attempts: 3, key: intent.key},
		]);
		expect(seen[0]).toMatchObject({request: {headers: {'content-type': 'application/json', accept: 'application/json', 'x-client-version': '1.2.3'}}});
		expect(JSON.stringify(seen)).not.toMatch(/s3cret|k3y-secret|authorization|x-api-key/i);
		for (const request of server.requests) {
			expect(request.headers).toMatchObject({authorization: 'Bearer s3cret-token', 'x-api-key': 'k3y-secret', 'idempotency-key': intent.key});
		}

		expect(await store.get('intent:checkout')).toBeUndefined();
	});

	test('a store that cannot be written: intent() rejects and nothing is sent', async () => {
		const full = async () => {
			throw Object.assign(new Error('The quota has been exceeded.'), {name: 'QuotaExceededError'});
		};
		const failing: IntentStore = {...memoryStore(), set: full, update: full};
		const client = createClient({...fast, store: failing});
		await expect(client.intent('order', {url: orders(), json: {order: 'd-2'}})).rejects.toMatchObject({name: 'StoreError', code: 'STORE_QUOTA'});
		expect(server.requests).toHaveLength(0);
	});
});
