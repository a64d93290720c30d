import {HttpResponse} from 'msw';
import {afterEach, beforeEach, describe, expect, test, vi} from 'vitest';
import {createClient, type ClientOptions} from '../../src/index.js';
import {drive, eventLog, flush, status, testStore, until, URL_ORDERS, useMsw} from './helpers.js';

const {api} = useMsw();

beforeEach(() => {
	vi.useFakeTimers();
});
afterEach(() => {
	vi.useRealTimers();
	vi.unstubAllGlobals();
});

async function setUp(options: ClientOptions = {}) {
	const store = testStore();
	const log = eventLog();
	const client = createClient({store, retry: {limit: 3, baseDelay: 10, maxDelay: 5000}, onEvent: log.onEvent, ...options});
	const intent = await client.intent('order', {url: URL_ORDERS, json: {order: 'a-1'}});
	return {store, log, client, intent};
}

describe('offline', () => {
	/** A browser-like global: `navigator.onLine` and `online` events on globalThis. */
	function goOffline() {
		const navigator = {onLine: false};
		const target = new EventTarget();
		vi.stubGlobal('navigator', navigator);
		vi.stubGlobal('addEventListener', target.addEventListener.bind(target));
		vi.stubGlobal('removeEventListener', target.removeEventListener.bind(target));
		vi.stubGlobal('dispatchEvent', target.dispatchEvent.bind(target));
		return {
			comeOnline() {
				navigator.onLine = true;
				globalThis.dispatchEvent(new Event('online'));
			},
		};
	}

	test('waits for the online event without spending an attempt, then sends', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const network = goOffline();
		const {store, log, intent} = await setUp();
		const sending = intent.send();
		await until(() => log.of('wait-online').length === 1, 'the wait-online event');

		expect(log.of('wait-online')[0]).toMatchObject({key: intent.key, scope: 'order', attempt: 0});
		await vi.advanceTimersByTimeAsync(4000);
		await flush();
		expect(seen).toEqual([]);
		expect(intent.attempts).toBe(0);
		expect(store.record('order')).toMatchObject({state: 'pending', attempts: 0});

		network.comeOnline();
		await until(() => seen.length === 1, 'the request after online');
		expect(await drive(sending)).toMatchObject({status: 'succeeded', attempts: 1});
		expect(Date.now()).toBeLessThan(intent.createdAt + 5000);
	});

	test('tries anyway after maxDelay when no online event comes', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		goOffline();
		const {log, intent} = await setUp();
		const sending = intent.send();
		await until(() => log.of('wait-online').length === 1, 'the wait-online event');

		await vi.advanceTimersByTimeAsync(4999);
		await flush();
		expect(seen).toEqual([]);
		await vi.advanceTimersByTimeAsync(1);
		await until(() => seen.length === 1, 'the request after maxDelay');
		expect(await drive(sending)).toMatchObject({status: 'succeeded', attempts: 1});
	});

	test('a retry while offline waits too, and the wait does not count against the limit', async () => {
		let online = true;
		const seen = api(() => {
			online = false;
			vi.stubGlobal('navigator', {onLine: false});
			return new HttpResponse(null, {status: 503});
		}, HttpResponse.json({ok: true}));
		const {log, intent} = await setUp({retry: {limit: 2, baseDelay: 10, maxDelay: 1000}});
		const sending = intent.send();
		await until(() => !online && log.of('retry').length === 1, 'the retry');
		await vi.advanceTimersByTimeAsync(log.of('retry')[0]!.delay);
		await until(() => log.of('wait-online').length === 1, 'the wait before the retry');
		expect(seen).toHaveLength(1);
		expect(log.of('wait-online')[0]!.attempt).toBe(1);
		vi.stubGlobal('navigator', {onLine: true});

		expect(await drive(sending)).toMatchObject({status: 'succeeded', attempts: 2});
		expect(seen).toHaveLength(2);
	});

	test('an abort while waiting to be online leaves a never-sent intent pending', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		goOffline();
		const {store, log, intent} = await setUp();
		const controller = new AbortController();
		const sending = intent.send({signal: controller.signal});
		await until(() => log.of('wait-online').length === 1, 'the wait-online event');
		controller.abort();

		expect(await drive(sending)).toMatchObject({reason: 'aborted', attempts: 0, mayHaveBeenSent: false});
		expect(seen).toEqual([]);
		expect(store.record('order')?.state).toBe('pending');
	});
});

describe('window', () => {
	test('an intent past its window is expired and never sent', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const {store, intent} = await setUp({window: 60_000});
		expect(intent.expiresAt).toBe(intent.createdAt + 60_000);
		await vi.advanceTimersByTimeAsync(60_000);
		const result = await drive(intent.send());

		expect(result).toEqual({status: 'expired', key: intent.key, attempts: 0, mayHaveBeenSent: false});
		expect(seen).toEqual([]);
		expect(intent.state).toBe('expired');
		expect(store.record('order')).toMatchObject({state: 'expired', key: intent.key});
	});

	test('an intent that expires while waiting to retry is not sent again', async () => {
		const seen = api(status(503, {'Retry-After': '30'}), HttpResponse.json({ok: true}));
		const {store, intent} = await setUp({window: 10_000});
		const result = await drive(intent.send(), {step: 1000});

		expect(seen).toHaveLength(1);
		expect(result).toMatchObject({status: 'expired', attempts: 1, mayHaveBeenSent: true});
		expect(store.record('order')?.state).toBe('expired');
	});

	test('an expired intent stays expired when sent again', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const {intent} = await setUp({window: 1000});
		await vi.advanceTimersByTimeAsync(1000);
		await drive(intent.send());
		expect(await drive(intent.send())).toMatchObject({status: 'expired'});
		expect(seen).toEqual([]);
	});

	test('the default window is 24 hours', async () => {
		const {intent} = await setUp();
		expect(intent.expiresAt - intent.createdAt).toBe(86_400_000);
	});
});
