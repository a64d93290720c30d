import {HttpResponse} from 'msw';
import {afterEach, beforeEach, describe, expect, test, vi} from 'vitest';
import {createClient, type ClientOptions} from '../../src/index.js';
import {drive, eventLog, flush, status, testStore, until, URL_ORDERS, useMsw} from './helpers.js';

const {api} = useMsw();

beforeEach(() => {
	vi.useFakeTimers();
	vi.spyOn(Math, 'random').mockReturnValue(0.5);
});
afterEach(() => {
	vi.useRealTimers();
	vi.restoreAllMocks();
});

/** A server that takes the request and never answers. */
const hang = async () => new Promise<Response>(() => undefined);

async function setUp(options: ClientOptions = {}) {
	const store = testStore();
	const log = eventLog();
	const client = createClient({store, retry: {limit: 3, baseDelay: 100, maxDelay: 1000}, onEvent: log.onEvent, ...options});
	const intent = await client.intent('order', {url: URL_ORDERS, json: {order: 'a-1'}});
	return {store, log, client, intent};
}

describe('per-attempt timeout', () => {
	test('gives up on an attempt after timeout ms and retries it with the same key', async () => {
		const seen = api(hang, HttpResponse.json({ok: true}));
		const {log, intent} = await setUp({timeout: 1000});
		const sending = intent.send();
		await until(() => seen.length === 1, 'the first request');

		await vi.advanceTimersByTimeAsync(999);
		await flush();
		expect(log.of('retry')).toEqual([]);
		await vi.advanceTimersByTimeAsync(1);
		await until(() => log.of('retry').length === 1, 'the retry');
		expect(log.of('retry')[0]!.error).toMatchObject({name: 'TimeoutError'});

		const result = await drive(sending);
		expect(result).toMatchObject({status: 'succeeded', attempts: 2});
		expect(seen.map(request => request.key)).toEqual([intent.key, intent.key]);
	});

	test('an attempt that times out every time ends unresolved with the timeout as its error', async () => {
		const seen = api(hang);
		const {store, intent} = await setUp({timeout: 500});
		const result = await drive(intent.send(), {step: 50});

		expect(seen).toHaveLength(3);
		expect(result).toMatchObject({status: 'unresolved', reason: 'exhausted', attempts: 3, mayHaveBeenSent: true, error: {name: 'TimeoutError'}});
		expect(store.record('order')).toMatchObject({state: 'unresolved', attempts: 3});
	});

	test('also bounds reading the body: an answer whose body never ends is retried after timeout ms', async () => {
		const stalled = () => new HttpResponse(new ReadableStream({
			start(controller) {
				controller.enqueue(new TextEncoder().encode('{"ok":'));
			},
		}), {headers: {'content-type': 'application/json'}});
		const seen = api(stalled, HttpResponse.json({ok: true}));
		const {log, intent} = await setUp({timeout: 1000});
		const result = await drive(intent.send(), {limit: 10_000});

		expect(log.of('retry')[0]!.error).toMatchObject({name: 'TimeoutError'});
		expect(result).toMatchObject({status: 'succeeded', attempts: 2});
		expect(seen).toHaveLength(2);
	});

	test('the default timeout is 15 s', async () => {
		const seen = api(hang, HttpResponse.json({ok: true}));
		const {log, intent} = await setUp();
		const sending = intent.send();
		await until(() => seen.length === 1, 'the first request');
		await vi.advanceTimersByTimeAsync(14_999);
		await flush();
		expect(log.of('retry')).toEqual([]);
		await vi.advanceTimersByTimeAsync(1);
		await until(() => log.of('retry').length === 1, 'the retry');
		await drive(sending);
	});
});

describe('signal', () => {
	test('aborted before the first attempt: nothing is sent and the intent stays pending', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const {store, intent} = await setUp();
		const controller = new AbortController();
		controller.abort();
		const result = await drive(intent.send({signal: controller.signal}));

		expect(seen).toEqual([]);
		expect(result).toMatchObject({status: 'unresolved', reason: 'aborted', attempts: 0, mayHaveBeenSent: false});
		expect(intent.state).toBe('pending');
		expect(store.record('order')).toMatchObject({state: 'pending', attempts: 0});
	});

	test('aborted during an attempt: unresolved with reason aborted, no retry', async () => {
		const seen = api(hang);
		const {store, log, intent} = await setUp();
		const controller = new AbortController();
		const sending = intent.send({signal: controller.signal});
		await until(() => seen.length === 1, 'the first request');
		controller.abort();
		const result = await drive(sending);

		expect(result).toMatchObject({status: 'unresolved', reason: 'aborted', attempts: 1, mayHaveBeenSent: true});
		expect(intent.state).toBe('unresolved');
		expect(store.record('order')).toMatchObject({state: 'unresolved', reason: 'aborted', attempts: 1});
		expect(log.of('retry')).toEqual([]);
		await vi.advanceTimersByTimeAsync(60_000);
		await flush();
		expect(seen).toHaveLength(1);
	});

	test('aborted during the wait between attempts: unresolved with reason aborted, no further attempt', async () => {
		const seen = api(status(503));
		const {store, log, intent} = await setUp();
		const controller = new AbortController();
		const sending = intent.send({signal: controller.signal});
		await until(() => log.of('retry').length === 1, 'the retry wait');
		controller.abort();
		const result = await drive(sending);

		expect(result).toMatchObject({status: 'unresolved', reason: 'aborted', attempts: 1, mayHaveBeenSent: true, response: {status: 503}});
		expect(store.record('order')).toMatchObject({state: 'unresolved', reason: 'aborted'});
		await vi.advanceTimersByTimeAsync(60_000);
		await flush();
		expect(seen).toHaveLength(1);
	});

	test('an aborted intent can be sent again, with the same key', async () => {
		const seen = api(status(503), HttpResponse.json({ok: true}));
		const {store, log, intent} = await setUp();
		const controller = new AbortController();
		const sending = intent.send({signal: controller.signal});
		await until(() => log.of('retry').length === 1, 'the retry wait');
		controller.abort();
		await drive(sending);

		expect(await drive(intent.send())).toMatchObject({status: 'succeeded', attempts: 2});
		expect(seen.map(request => request.key)).toEqual([intent.key, intent.key]);
		expect(store.records()).toEqual([]);
	});
});
