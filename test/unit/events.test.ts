import {HttpResponse} from 'msw';
import {afterEach, beforeEach, describe, expect, test, vi} from 'vitest';
import {createClient, type IntentSnapshot} from '../../src/index.js';
import {drive, eventLog, FAST, networkError, status, testStore, URL_ORDERS, useMsw} from './helpers.js';

const {api} = useMsw();

beforeEach(() => {
	vi.useFakeTimers();
});
afterEach(() => {
	vi.useRealTimers();
});

const MARKER = 'BODY-MARKER-7f3a';

describe('onEvent', () => {
	test('reports each attempt, each retry and the outcome, in order', async () => {
		api(status(503), networkError, HttpResponse.json({ok: true}));
		const log = eventLog();
		const client = createClient({...FAST, store: testStore(), onEvent: log.onEvent});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		await drive(intent.send());

		const {key} = intent;
		expect(log.events).toEqual([
			{type: 'attempt', key, scope: 'order', attempt: 1},
			{type: 'retry', key, scope: 'order', attempt: 1, delay: expect.any(Number) as unknown, status: 503},
			{type: 'attempt', key, scope: 'order', attempt: 2},
			{type: 'retry', key, scope: 'order', attempt: 2, delay: expect.any(Number) as unknown, error: expect.any(Error) as unknown},
			{type: 'attempt', key, scope: 'order', attempt: 3},
			{type: 'settled', key, scope: 'order', attempt: 3, outcome: 'succeeded', status: 200},
		]);
	});

	test('a retry event says how long the client will wait', async () => {
		vi.spyOn(Math, 'random').mockReturnValue(0.5);
		try {
			api(status(429, {'Retry-After': '2'}), status(503), HttpResponse.json({ok: true}));
			const log = eventLog();
			const client = createClient({store: testStore(), retry: {baseDelay: 100, maxDelay: 1000}, onEvent: log.onEvent});
			const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
			await drive(intent.send());

			expect(log.of('retry').map(event => [event.status, event.delay])).toEqual([[429, 2000], [503, 200]]);
		} finally {
			vi.restoreAllMocks();
		}
	});

	test('an unresolved outcome carries its reason and last status', async () => {
		api(status(503));
		const log = eventLog();
		const client = createClient({store: testStore(), retry: {limit: 2, baseDelay: 10, maxDelay: 100}, onEvent: log.onEvent});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		await drive(intent.send());

		expect(log.of('settled')).toEqual([{type: 'settled', key: intent.key, scope: 'order', attempt: 2, outcome: 'unresolved', reason: 'exhausted', status: 503}]);
	});

	test('a failed outcome is reported with its status', async () => {
		api(status(422));
		const log = eventLog();
		const client = createClient({...FAST, store: testStore(), onEvent: log.onEvent});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		await drive(intent.send());

		expect(log.of('settled')).toMatchObject([{outcome: 'failed', status: 422, attempt: 1}]);
		expect(log.of('retry')).toEqual([]);
	});

	test('an expired outcome is reported, with no attempt', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const log = eventLog();
		const client = createClient({...FAST, store: testStore(), window: 1000, onEvent: log.onEvent});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		await vi.advanceTimersByTimeAsync(1000);
		await drive(intent.send());

		expect(log.events).toEqual([{type: 'settled', key: intent.key, scope: 'order', attempt: 0, outcome: 'expired'}]);
		expect(seen).toEqual([]);
	});

	test('request bodies never appear in any event', async () => {
		api(status(503), networkError, status(409), HttpResponse.json({ok: true}));
		const log = eventLog();
		const client = createClient({
			store: testStore(),
			retry: {limit: 5, baseDelay: 10, maxDelay: 100},
			onEvent: log.onEvent,
			headers: {authorization: `Bearer ${MARKER}-secret`},
		});
		const json = await client.intent('order', {url: URL_ORDERS, json: {note: MARKER}});
		await drive(json.send());
		api(status(503));
		const text = await client.intent('text', {url: URL_ORDERS, body: `note=${MARKER}`});
		await drive(text.send());

		expect(log.of('attempt').length).toBeGreaterThanOrEqual(6);
		const serialised = JSON.stringify(log.events, (_name, value: unknown) =>
			(value instanceof Error ? {name: value.name, message: value.message, stack: value.stack, cause: value.cause} : value));
		expect(serialised).toContain(json.key);
		expect(serialised).not.toContain(MARKER);
		expect(log.events.map(event => String((event as {error?: unknown}).error))).not.toContainEqual(expect.stringContaining(MARKER));
	});
});

describe('subscribe', () => {
	test('listeners get a new snapshot at each change and can unsubscribe', async () => {
		api(status(503), HttpResponse.json({ok: true}));
		const client = createClient({...FAST, store: testStore()});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {}});
		const snapshots: IntentSnapshot[] = [];
		const unsubscribe = intent.subscribe(snapshot => snapshots.push(snapshot));
		const result = await drive(intent.send());

		expect(snapshots.map(snapshot => [snapshot.state, snapshot.attempts])).toEqual([['sending', 1], ['sending', 2], ['succeeded', 2]]);
		expect(snapshots.at(-1)).toMatchObject({key: intent.key, result, mayHaveBeenSent: true});
		expect(Object.isFrozen(snapshots[0])).toBe(true);
		expect(intent.snapshot).toBe(snapshots.at(-1));

		unsubscribe();
		await intent.discard();
		expect(snapshots).toHaveLength(3);
	});
});
