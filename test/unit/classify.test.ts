import {HttpResponse} from 'msw';
import {afterEach, beforeEach, describe, expect, test, vi} from 'vitest';
import {classify, type Answer} from '../../src/core/classify.js';
import {createClient, type ClientOptions} from '../../src/index.js';
import {drive, FAST, networkError, status, testStore, URL_ORDERS, useMsw} from './helpers.js';

const {api} = useMsw();

beforeEach(() => {
	vi.useFakeTimers();
});
afterEach(() => {
	vi.useRealTimers();
});

const answer = (code: number, headers: Record<string, string> = {}, data?: unknown): Answer => ({response: {status: code, headers}, data, body: ''});

async function sendOnce(options: ClientOptions = {}, json: unknown = {order: 'a-1'}) {
	const store = testStore();
	const client = createClient({...FAST, ...options, store});
	const intent = await client.intent('order', {url: URL_ORDERS, json});
	const result = await drive(intent.send());
	return {intent, result, store};
}

describe('classify(), the pure chain', () => {
	test.each([200, 201, 202, 204, 299])('%i is a success', code => {
		expect(classify(answer(code))).toEqual({type: 'succeeded', replayed: false});
	});

	test('a 2xx with Idempotent-Replayed: true is a replayed success', () => {
		expect(classify(answer(200, {'idempotent-replayed': 'true'}))).toEqual({type: 'succeeded', replayed: true});
	});

	test('409 means the first attempt is still in progress', () => {
		expect(classify(answer(409))).toEqual({type: 'in-progress'});
	});

	test.each([408, 425, 429, 500, 502, 503, 504, 599])('%i is indeterminate', code => {
		expect(classify(answer(code))).toEqual({type: 'indeterminate'});
	});

	test('no answer at all (network error or timeout) is indeterminate', () => {
		expect(classify({error: new TypeError('Failed to fetch'), timedOut: false})).toEqual({type: 'indeterminate'});
		expect(classify({error: new Error('timed out'), timedOut: true})).toEqual({type: 'indeterminate'});
	});

	test('a 5xx with Idempotent-Replayed: true is the stored outcome', () => {
		expect(classify(answer(500, {'idempotent-replayed': 'true'}))).toEqual({type: 'replayed-error'});
	});

	test.each([400, 401, 403, 404, 405, 410, 422])('%i is a refusal', code => {
		expect(classify(answer(code))).toEqual({type: 'failed'});
	});

	test('Stripe-Should-Retry: true makes a 400 retryable', () => {
		expect(classify(answer(400, {'stripe-should-retry': 'true'}))).toEqual({type: 'indeterminate'});
	});

	test('Stripe-Should-Retry: false stops a 503 and a 429 from being retried', () => {
		expect(classify(answer(503, {'stripe-should-retry': 'false'})).type).not.toBe('indeterminate');
		expect(classify(answer(429, {'stripe-should-retry': 'false'}))).toEqual({type: 'failed'});
	});

	test('Stripe-Should-Retry: false stops a 409 from being waited on', () => {
		expect(classify(answer(409, {'stripe-should-retry': 'false'}))).toEqual({type: 'failed'});
	});

	test.each([400, 401, 403, 404, 422])('%i after an earlier attempt may have reached the server is refused, not failed', code => {
		expect(classify(answer(code), undefined, true)).toEqual({type: 'refused'});
		expect(classify(answer(code, {'stripe-should-retry': 'false'}), undefined, true)).toEqual({type: 'refused'});
	});

	test('a 4xx the server marks as its stored answer settles, even after a possible delivery', () => {
		expect(classify(answer(400, {'idempotent-replayed': 'true'}), undefined, true)).toEqual({type: 'failed'});
	});

	test('a redirected answer, or a 3xx, is never a success by itself', () => {
		expect(classify({response: {status: 200, headers: {}, redirected: true, url: 'https://api.test/login'}, data: '', body: ''})).toEqual({type: 'redirected'});
		expect(classify(answer(302, {location: '/login'}))).toEqual({type: 'redirected'});
		expect(classify(answer(303))).toEqual({type: 'redirected'});
	});

	test('the hook may decide a redirected answer', () => {
		const redirected = {response: {status: 200, headers: {}, redirected: true, url: 'https://api.test/orders/7'}, data: {id: 7}, body: '{"id":7}'};
		expect(classify(redirected, response => (response.url?.startsWith('https://api.test/orders/') ? 'success' : undefined))).toEqual({type: 'succeeded', replayed: false});
	});

	test('an unreadable answer (opaque, status 0) is a transport problem, never retried', () => {
		expect(classify({error: new Error('opaque'), timedOut: false, unreadable: true})).toEqual({type: 'transport'});
	});

	test('the classify hook runs before the built-in chain', () => {
		const hook = vi.fn(() => 'fail' as const);
		expect(classify(answer(409, {}, {code: 'invalid_idempotent_request'}), hook)).toEqual({type: 'failed'});
		expect(hook).toHaveBeenCalledWith({status: 409, headers: {}}, {code: 'invalid_idempotent_request'});
		expect(classify(answer(200), () => 'retry')).toEqual({type: 'indeterminate'});
		expect(classify(answer(503, {'stripe-should-retry': 'true'}), () => 'fail')).toEqual({type: 'failed'});
	});

	test('a hook that returns unresolved ends the send unresolved, refused, even on a first attempt', () => {
		expect(classify(answer(401, {}), () => 'unresolved')).toEqual({type: 'refused'});
		expect(classify(answer(201, {}), () => 'unresolved', true)).toEqual({type: 'refused'});
	});

	test('a hook that returns undefined falls through to the chain', () => {
		expect(classify(answer(503), () => undefined)).toEqual({type: 'indeterminate'});
		expect(classify(answer(201), () => undefined)).toEqual({type: 'succeeded', replayed: false});
	});
});

describe('the chain, as the server sees it', () => {
	test('a 2xx succeeds after one request, with the parsed body and a plain response', async () => {
		const seen = api(HttpResponse.json({id: 'ord_1'}, {status: 201, headers: {'X-Request-Id': 'r1'}}));
		const {intent, result} = await sendOnce();

		expect(seen).toHaveLength(1);
		expect(result).toMatchObject({status: 'succeeded', key: intent.key, replayed: false, attempts: 1, data: {id: 'ord_1'}});
		if (result.status !== 'succeeded') throw new Error('unreachable');
		expect(result.response.status).toBe(201);
		expect(result.response.headers['x-request-id']).toBe('r1');
		expect(Object.getPrototypeOf(result.response)).toBe(Object.prototype);
		expect(structuredClone(result.response)).toEqual(result.response);
	});

	test('a 2xx with Idempotent-Replayed: true succeeds as replayed', async () => {
		api(HttpResponse.json({id: 'ord_1'}, {headers: {'Idempotent-Replayed': 'true'}}));
		const {result} = await sendOnce();
		expect(result).toMatchObject({status: 'succeeded', replayed: true});
	});

	test('a text answer is kept as text and an empty one as undefined', async () => {
		api(HttpResponse.text('queued'));
		expect((await sendOnce()).result).toMatchObject({status: 'succeeded', data: 'queued'});
		api(status(204));
		const {result} = await sendOnce();
		expect(result.status).toBe('succeeded');
		expect(result.status === 'succeeded' && result.data).toBeUndefined();
	});

	test.each<[string, string | undefined, 'text' | 'bytes']>([
		['JSON', 'application/json; charset=utf-8', 'text'],
		['problem+json', 'application/problem+json', 'text'],
		['NDJSON', 'application/x-ndjson', 'text'],
		['plain text', 'text/plain', 'text'],
		['HTML', 'text/html; charset=utf-8', 'text'],
		['SVG', 'image/svg+xml', 'text'],
		['a form', 'application/x-www-form-urlencoded', 'text'],
		['no content type', undefined, 'text'],
		['a PNG', 'image/png', 'bytes'],
		['octets', 'application/octet-stream', 'bytes'],
		['a PDF named .json', 'application/pdf; name=invoice.json', 'bytes'],
		['a spreadsheet (xml inside openxmlformats)', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', 'bytes'],
		['PostScript', 'application/postscript', 'bytes'],
	])('%s (%s) is `data` as %s (issue 20)', async (_case, type, as) => {
		const bytes = new TextEncoder().encode('{"id":1}');
		api(new HttpResponse(bytes, {status: 201, headers: type ? {'content-type': type} : {}}));
		const {result} = await sendOnce();
		const {data} = result as {data: unknown};
		if (as === 'bytes') expect(new Uint8Array(data as ArrayBuffer)).toEqual(bytes);
		else expect(data).toEqual(type?.includes('json') && !type.includes('ndjson') ? {id: 1} : '{"id":1}');
	});

	test('where the runtime has no TextDecoder (Hermes), a textual body is read as text, and bytes stay bytes', async () => {
		vi.stubGlobal('TextDecoder', undefined);
		try {
			api(HttpResponse.json({id: 'ord_1'}, {status: 201}));
			expect((await sendOnce()).result).toMatchObject({status: 'succeeded', data: {id: 'ord_1'}});
			api(new HttpResponse(Uint8Array.of(0x89, 0x50), {status: 201, headers: {'content-type': 'image/png'}}));
			const {data} = (await sendOnce()).result as {data: ArrayBuffer};
			expect(new Uint8Array(data)).toEqual(Uint8Array.of(0x89, 0x50));
		} finally {
			vi.unstubAllGlobals();
		}
	});

	test('a polyfilled Response with no body stream (React Native\'s fetch) is read as text where the answer is textual', async () => {
		const polyfilled = {status: 201, type: 'default', headers: new Headers({'content-type': 'application/json'}), text: async () => '{"id":"ord_1"}'};
		const {result} = await sendOnce({fetch: async () => polyfilled as unknown as Response});
		expect(result).toMatchObject({status: 'succeeded', data: {id: 'ord_1'}});
	});

	test('waits on a 409 and asks again with the same key', async () => {
		const seen = api(status(409), status(409), HttpResponse.json({id: 'ord_1'}));
		const {intent, result} = await sendOnce();

		expect(seen.map(request => request.key)).toEqual([intent.key, intent.key, intent.key]);
		expect(result).toMatchObject({status: 'succeeded', attempts: 3});
	});

	test.each([408, 425, 429, 500, 502, 503, 504])('retries a %i with the same key', async code => {
		const seen = api(status(code), HttpResponse.json({ok: true}));
		const {intent, result} = await sendOnce();

		expect(seen.map(request => request.key)).toEqual([intent.key, intent.key]);
		expect(result).toMatchObject({status: 'succeeded', attempts: 2});
	});

	test('retries a network error with the same key', async () => {
		const seen = api(networkError, networkError, HttpResponse.json({ok: true}));
		const {intent, result} = await sendOnce();

		expect(seen.map(request => request.key)).toEqual([intent.key, intent.key, intent.key]);
		expect(result).toMatchObject({status: 'succeeded', attempts: 3});
	});

	test('a network error on every attempt ends unresolved, never rejected', async () => {
		const seen = api(networkError);
		const {result} = await sendOnce({retry: {limit: 3, baseDelay: 10, maxDelay: 100}});

		expect(seen).toHaveLength(3);
		expect(result).toMatchObject({status: 'unresolved', reason: 'exhausted', attempts: 3, mayHaveBeenSent: true});
		expect(result.status === 'unresolved' && result.error).toBeInstanceOf(Error);
	});

	test('a 5xx with Idempotent-Replayed: true stops as unresolved replayed-error after one request', async () => {
		const seen = api(status(500, {'Idempotent-Replayed': 'true'}));
		const {result, store} = await sendOnce();

		expect(seen).toHaveLength(1);
		expect(result).toMatchObject({status: 'unresolved', reason: 'replayed-error', attempts: 1, mayHaveBeenSent: true});
		expect(store.record('order')).toMatchObject({state: 'unresolved', reason: 'replayed-error'});
	});

	test.each([400, 401, 403, 404, 422])('a %i fails after one request', async code => {
		const seen = api(HttpResponse.json({error: 'nope'}, {status: code}));
		const {intent, result} = await sendOnce();

		expect(seen).toHaveLength(1);
		expect(result).toEqual({status: 'failed', key: intent.key, response: {status: code, headers: expect.any(Object) as unknown}, data: {error: 'nope'}, attempts: 1});
	});

	test('a failed intent retires its key: the same action again gets a new key', async () => {
		const seen = api(status(400), HttpResponse.json({ok: true}));
		const store = testStore();
		const client = createClient({...FAST, store});
		const first = await client.intent('order', {url: URL_ORDERS, json: {order: 'a-1'}});
		await drive(first.send());
		const second = await client.intent('order', {url: URL_ORDERS, json: {order: 'a-1'}});
		await drive(second.send());

		expect(second.key).not.toBe(first.key);
		expect(seen.map(request => request.key)).toEqual([first.key, second.key]);
	});

	test('Stripe-Should-Retry: true retries a 400 with the same key', async () => {
		const seen = api(status(400, {'Stripe-Should-Retry': 'true'}), HttpResponse.json({ok: true}));
		const {intent, result} = await sendOnce();

		expect(seen.map(request => request.key)).toEqual([intent.key, intent.key]);
		expect(result.status).toBe('succeeded');
	});

	test('Stripe-Should-Retry: false stops a 503 after one request, unresolved', async () => {
		const seen = api(status(503, {'Stripe-Should-Retry': 'false'}));
		const {result} = await sendOnce();

		expect(seen).toHaveLength(1);
		expect(result).toMatchObject({status: 'unresolved', mayHaveBeenSent: true});
	});

	test('Stripe-Should-Retry: false fails a 429 after one request', async () => {
		const seen = api(status(429, {'Stripe-Should-Retry': 'false'}));
		const {result} = await sendOnce();

		expect(seen).toHaveLength(1);
		expect(result.status).toBe('failed');
	});

	test('a classify hook fails a Resend-style 409 invalid_idempotent_request after one request', async () => {
		const seen = api(HttpResponse.json({name: 'invalid_idempotent_request'}, {status: 409}));
		const hook = vi.fn((response: {status: number}, data: unknown) =>
			response.status === 409 && (data as {name?: string}).name === 'invalid_idempotent_request' ? 'fail' as const : undefined);
		const {result} = await sendOnce({classify: hook});

		expect(seen).toHaveLength(1);
		expect(result).toMatchObject({status: 'failed', data: {name: 'invalid_idempotent_request'}});
		expect(hook).toHaveBeenCalledWith(expect.objectContaining({status: 409}), {name: 'invalid_idempotent_request'});
	});

	test('a classify hook that falls through leaves an ordinary 409 to be waited on', async () => {
		const seen = api(HttpResponse.json({name: 'concurrent_idempotent_requests'}, {status: 409}), HttpResponse.json({ok: true}));
		const {result} = await sendOnce({classify: (_response, data) => ((data as {name?: string}).name === 'invalid_idempotent_request' ? 'fail' : undefined)});

		expect(seen).toHaveLength(2);
		expect(result.status).toBe('succeeded');
	});

	test('a classify hook can retry a 200 and accept a 500', async () => {
		const seen = api(HttpResponse.json({state: 'processing'}), status(500));
		const {result} = await sendOnce({classify: response => (response.status === 200 ? 'retry' : 'success')});

		expect(seen).toHaveLength(2);
		expect(result).toMatchObject({status: 'succeeded', response: {status: 500}});
	});
});
