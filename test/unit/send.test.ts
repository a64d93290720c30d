import ky from 'ky';
import {HttpResponse} from 'msw';
import {afterEach, beforeEach, describe, expect, test, vi} from 'vitest';
import {createClient} from '../../src/index.js';
import {drive, FAST, flush, networkError, status, testStore, until, URL_ORDERS, useMsw} from './helpers.js';

const {api} = useMsw();

beforeEach(() => {
	vi.useFakeTimers();
});
afterEach(() => {
	vi.useRealTimers();
});

describe('every attempt is the same request', () => {
	test('retries a 503 with the same key and the same bytes', async () => {
		const seen = api(status(503), networkError, status(502), HttpResponse.json({ok: true}));
		const client = createClient({...FAST, store: testStore()});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {items: [{sku: 'A', qty: 2}], note: 'ünïcödé ✓'}});
		const result = await drive(intent.send());

		expect(result).toMatchObject({status: 'succeeded', attempts: 4});
		expect(seen).toHaveLength(4);
		expect(new Set(seen.map(request => request.key))).toEqual(new Set([intent.key]));
		expect(new Set(seen.map(request => request.body))).toEqual(new Set(['{"items":[{"qty":2,"sku":"A"}],"note":"ünïcödé ✓"}']));
		expect(new Set(seen.map(request => `${request.method} ${request.url} ${request.headers['content-type']}`)))
			.toEqual(new Set([`POST ${URL_ORDERS} application/json`]));
	});

	test('sends a form body with its content type, the same on every attempt', async () => {
		const seen = api(status(503), HttpResponse.json({ok: true}));
		const client = createClient({...FAST, store: testStore()});
		const intent = await client.intent('contact', {url: URL_ORDERS, method: 'PUT', body: new URLSearchParams({name: 'Ada', message: 'Hi & bye'})});
		await drive(intent.send());

		expect(seen.map(request => [request.method, request.body, request.headers['content-type']])).toEqual([
			['PUT', 'name=Ada&message=Hi+%26+bye', 'application/x-www-form-urlencoded;charset=UTF-8'],
			['PUT', 'name=Ada&message=Hi+%26+bye', 'application/x-www-form-urlencoded;charset=UTF-8'],
		]);
	});

	test('never sends a GET: the intent is refused before any request', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const client = createClient({...FAST, store: testStore()});
		await expect(client.intent('order', {url: URL_ORDERS, method: 'GET' as never})).rejects.toThrow(/`method`/);
		expect(seen).toEqual([]);
	});

	test('a DELETE without a body sends no body', async () => {
		const seen = api(status(204));
		const client = createClient({...FAST, store: testStore()});
		const intent = await client.intent('cancel', {url: `${URL_ORDERS}/42`, method: 'DELETE'});
		await drive(intent.send());

		expect(seen).toMatchObject([{method: 'DELETE', url: `${URL_ORDERS}/42`, body: '', key: intent.key}]);
	});

	test('the same form values in another key order are the same intent and the same bytes', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const client = createClient({...FAST, store: testStore()});
		const first = await client.intent('order', {url: URL_ORDERS, json: {a: 1, b: 2}});
		const second = await client.intent('order', {url: URL_ORDERS, json: {b: 2, a: 1}});
		await drive(second.send());

		expect(second).toBe(first);
		expect(seen).toMatchObject([{key: first.key, body: '{"a":1,"b":2}'}]);
	});
});

describe('retry limit', () => {
	test('counts the attempts of one send() call', async () => {
		const seen = api(status(503));
		const client = createClient({store: testStore(), retry: {limit: 3, baseDelay: 10, maxDelay: 100}});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		const result = await drive(intent.send());

		expect(seen).toHaveLength(3);
		expect(result).toMatchObject({status: 'unresolved', reason: 'exhausted', attempts: 3, mayHaveBeenSent: true, response: {status: 503}});
		expect(intent.state).toBe('unresolved');
		expect(intent.mayHaveBeenSent).toBe(true);
	});

	test('a number for retry is the limit', async () => {
		const seen = api(status(503));
		const client = createClient({store: testStore(), retry: 2});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		await drive(intent.send(), {step: 100});
		expect(seen).toHaveLength(2);
	});

	test('retry: 1 sends once and never retries', async () => {
		const seen = api(status(503));
		const client = createClient({store: testStore(), retry: 1});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		expect(await drive(intent.send())).toMatchObject({status: 'unresolved', reason: 'exhausted', attempts: 1});
		expect(seen).toHaveLength(1);
	});

	test('sending an unresolved intent again continues with the same key and counts all attempts', async () => {
		const seen = api(status(503), status(503), HttpResponse.json({ok: true}));
		const store = testStore();
		const client = createClient({store, retry: {limit: 2, baseDelay: 10, maxDelay: 100}});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		expect(await drive(intent.send())).toMatchObject({status: 'unresolved', attempts: 2});
		expect(await drive(intent.send())).toMatchObject({status: 'succeeded', attempts: 3});

		expect(seen.map(request => request.key)).toEqual([intent.key, intent.key, intent.key]);
		expect(store.records()).toEqual([]);
	});
});

describe('send()', () => {
	test('is single-flight: two concurrent sends make one request and share the result', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const client = createClient({...FAST, store: testStore()});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		const first = intent.send();
		const second = intent.send();
		const [a, b] = await drive(Promise.all([first, second]));

		expect(seen).toHaveLength(1);
		expect(b).toBe(a);
	});

	test('a send while retries are waiting joins that run instead of starting another', async () => {
		const seen = api(status(503), HttpResponse.json({ok: true}));
		const client = createClient({...FAST, store: testStore()});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		const first = intent.send();
		await until(() => seen.length === 1);
		const second = intent.send();
		await drive(Promise.all([first, second]));

		expect(seen).toHaveLength(2);
		expect(await second).toBe(await first);
	});

	test('a settled intent answers send() with its result and sends nothing', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const client = createClient({...FAST, store: testStore()});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		const result = await drive(intent.send());
		expect(await drive(intent.send())).toBe(result);
		expect(seen).toHaveLength(1);
	});

	test('send() after discard() is a programming error', async () => {
		api(HttpResponse.json({ok: true}));
		const client = createClient({...FAST, store: testStore()});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		await intent.discard();
		await expect(intent.send()).rejects.toThrow(TypeError);
	});
});

describe('headers', () => {
	test('client headers are sent on every attempt', async () => {
		const seen = api(status(503), status(503), HttpResponse.json({ok: true}));
		const client = createClient({...FAST, store: testStore(), headers: {authorization: 'Bearer s3cret', 'x-client': 'web'}});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		await drive(intent.send());

		expect(seen.map(request => [request.headers.authorization, request.headers['x-client']])).toEqual([
			['Bearer s3cret', 'web'], ['Bearer s3cret', 'web'], ['Bearer s3cret', 'web'],
		]);
	});

	test('a headers function is called before each attempt, so a refreshed token is used', async () => {
		let token = 0;
		const seen = api(status(503), status(503), HttpResponse.json({ok: true}));
		const client = createClient({...FAST, store: testStore(), headers: async () => ({authorization: `Bearer t${++token}`})});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		await drive(intent.send());

		expect(seen.map(request => request.headers.authorization)).toEqual(['Bearer t1', 'Bearer t2', 'Bearer t3']);
	});

	test('request headers are sent with the intent', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const client = createClient({...FAST, store: testStore(), persistHeaders: ['x-tenant']});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}, headers: {Accept: 'application/json', 'X-Tenant': 't1', 'X-Trace': 'abc'}});
		await drive(intent.send());

		expect(seen[0]!.headers).toMatchObject({accept: 'application/json', 'x-tenant': 't1', 'x-trace': 'abc', 'content-type': 'application/json'});
	});

	test('a request header overrides a client header that differs only in case', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const client = createClient({...FAST, store: testStore(), headers: {Accept: 'text/plain', 'Content-Type': 'application/json'}});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}, headers: {accept: 'application/json'}});
		await drive(intent.send());

		expect(seen[0]!.headers.accept).toBe('application/json');
		expect(seen[0]!.headers['content-type']).toBe('application/json');
	});

	test("sends only the intent's key, even when the client headers carry the key header", async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const client = createClient({...FAST, store: testStore(), headers: {'idempotency-key': 'stale-key'}});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		await drive(intent.send());

		expect(seen[0]!.key).toBe(intent.key);
	});
});

describe('transport', () => {
	test('a custom fetch function carries every attempt', async () => {
		const seen = api(status(503), HttpResponse.json({ok: true}));
		const calls: string[] = [];
		const client = createClient({
			...FAST,
			store: testStore(),
			async fetch(input: RequestInfo | URL, init?: RequestInit) {
				calls.push(input instanceof Request ? input.url : String(input));
				return fetch(input, init);
			},
		});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		await drive(intent.send());

		expect(calls).toEqual([URL_ORDERS, URL_ORDERS]);
		expect(seen).toHaveLength(2);
	});

	test("a ky instance keeps its hooks, and its own retry is off for sendonce's calls", async () => {
		const seen = api(status(503), HttpResponse.json({ok: true}));
		const instance = ky.create({
			retry: {limit: 5, methods: ['post']},
			hooks: {beforeRequest: [request => {
				request.headers.set('x-from-hook', 'yes');
			}]},
		});
		const client = createClient({store: testStore(), retry: {limit: 1, baseDelay: 10, maxDelay: 100}, fetch: instance});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		const result = await drive(intent.send());

		expect(seen).toHaveLength(1);
		expect(seen[0]!.headers['x-from-hook']).toBe('yes');
		expect(result).toMatchObject({status: 'unresolved', reason: 'exhausted'});
	});

	test("a ky instance's prefixUrl does not change the stored URL", async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const client = createClient({...FAST, store: testStore(), fetch: ky.create({prefixUrl: 'https://elsewhere.test/v2'})});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		await drive(intent.send());
		expect(seen[0]!.url).toBe(URL_ORDERS);
	});

	test('a throwing onEvent listener does not break sending', async () => {
		const seen = api(status(503), HttpResponse.json({ok: true}));
		const client = createClient({
			...FAST,
			store: testStore(),
			onEvent() {
				throw new Error('listener bug');
			},
		});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		expect(await drive(intent.send())).toMatchObject({status: 'succeeded'});
		expect(seen).toHaveLength(2);
		await flush();
	});
});
