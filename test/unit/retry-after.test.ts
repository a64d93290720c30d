import {HttpResponse} from 'msw';
import {afterEach, beforeEach, describe, expect, test, vi} from 'vitest';
import {createClient} from '../../src/index.js';
import {parseRetryAfter} from '../../src/core/retry-after.js';
import {drive, eventLog, flush, status, testStore, until, URL_ORDERS, useMsw} from './helpers.js';

const {api} = useMsw();

describe('parseRetryAfter()', () => {
	const now = Date.parse('2026-03-01T12:00:00Z');

	test('reads delay-seconds as milliseconds', () => {
		expect(parseRetryAfter('0', now)).toBe(0);
		expect(parseRetryAfter('3', now)).toBe(3000);
		expect(parseRetryAfter('120', now)).toBe(120_000);
		expect(parseRetryAfter(' 7 ', now)).toBe(7000);
	});

	test('reads an HTTP date as the time left until it', () => {
		expect(parseRetryAfter('Sun, 01 Mar 2026 12:00:05 GMT', now)).toBe(5000);
		expect(parseRetryAfter('Sun, 01 Mar 2026 12:02:00 GMT', now)).toBe(120_000);
	});

	test('an HTTP date in the past means now', () => {
		expect(parseRetryAfter('Sun, 01 Mar 2026 11:59:00 GMT', now)).toBe(0);
	});

	test('reads the obsolete RFC 850 and asctime date forms, as RFC 9110 asks', () => {
		expect(parseRetryAfter('Sunday, 01-Mar-26 12:00:05 GMT', now)).toBe(5000);
		expect(parseRetryAfter('Sun Mar  1 12:00:05 2026', now)).toBe(5000);
	});

	test.each(['a, 5', 'June 5', '5 June', 'Sun, 01 Mar 2026', '2026-03-01T12:00:05Z', 'Sun, 01 Mar 2026 12:00:05 CET', 'Sun, 32 Mar 2026 12:00:05 GMT', 'Sun, 31 Feb 2026 12:00:05 GMT', 'Sun, 01 Mar 2026 25:00:05 GMT', '5s', '+5'])(
		'ignores %j, which is neither delay-seconds nor an HTTP-date: the backoff applies',
		value => {
			expect(parseRetryAfter(value, now)).toBeUndefined();
		},
	);

	test('is undefined when absent or unreadable', () => {
		expect(parseRetryAfter(undefined, now)).toBeUndefined();
		expect(parseRetryAfter('', now)).toBeUndefined();
		expect(parseRetryAfter('soon', now)).toBeUndefined();
		expect(parseRetryAfter('-5', now)).toBeUndefined();
		expect(parseRetryAfter('1.5', now)).toBeUndefined();
	});

	test('measures a date from the current time by default', () => {
		vi.useFakeTimers({now});
		try {
			expect(parseRetryAfter('Sun, 01 Mar 2026 12:00:30 GMT')).toBe(30_000);
		} finally {
			vi.useRealTimers();
		}
	});
});

describe('Retry-After between attempts', () => {
	beforeEach(() => {
		vi.useFakeTimers({now: Date.parse('2026-03-01T12:00:00Z')});
		// A backoff draw that would retry almost at once: any wait seen is Retry-After's.
		vi.spyOn(Math, 'random').mockReturnValue(0);
	});
	afterEach(() => {
		vi.useRealTimers();
		vi.restoreAllMocks();
	});

	async function start(retryAfter: string, code = 503, retry = {limit: 3, baseDelay: 10, maxDelay: 100}) {
		const seen = api(status(code, {'Retry-After': retryAfter}), HttpResponse.json({ok: true}));
		const log = eventLog();
		const store = testStore();
		const client = createClient({store, retry, onEvent: log.onEvent});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {order: 'a-1'}});
		const sending = intent.send();
		return {seen, log, store, intent, sending};
	}

	async function expectNextAttemptAfter(seen: unknown[], delay: number) {
		await vi.advanceTimersByTimeAsync(delay - 1);
		await flush();
		expect(seen).toHaveLength(1);
		await vi.advanceTimersByTimeAsync(1);
		await until(() => seen.length === 2, 'the second request');
	}

	test('waits the Retry-After seconds before the next attempt', async () => {
		const {seen, log, intent, sending} = await start('3');
		await until(() => log.of('retry').length === 1, 'the retry');
		expect(log.of('retry')[0]).toMatchObject({delay: 3000, status: 503});

		await expectNextAttemptAfter(seen, 3000);
		expect(seen.map(request => request.key)).toEqual([intent.key, intent.key]);
		await expect(drive(sending)).resolves.toMatchObject({status: 'succeeded', attempts: 2});
	});

	test('waits until the Retry-After HTTP date before the next attempt', async () => {
		const {seen, log, sending} = await start(new Date(Date.now() + 5000).toUTCString());
		await until(() => log.of('retry').length === 1, 'the retry');
		expect(log.of('retry')[0]!.delay).toBe(5000);

		await expectNextAttemptAfter(seen, 5000);
		await expect(drive(sending)).resolves.toMatchObject({status: 'succeeded'});
	});

	test('a Retry-After longer than maxDelay still wins over the backoff', async () => {
		const {seen, log, sending} = await start('2', 503, {limit: 3, baseDelay: 10, maxDelay: 100});
		await until(() => log.of('retry').length === 1, 'the retry');
		await expectNextAttemptAfter(seen, 2000);
		await drive(sending);
	});

	test('waits the Retry-After of a 409 before asking again', async () => {
		const {seen, log, sending} = await start('2', 409);
		await until(() => log.of('retry').length === 1, 'the retry');
		expect(log.of('retry')[0]!.delay).toBe(2000);
		await expectNextAttemptAfter(seen, 2000);
		await expect(drive(sending)).resolves.toMatchObject({status: 'succeeded'});
	});

	test('waits the Retry-After of a 429', async () => {
		const {seen, log, sending} = await start('1', 429);
		await until(() => log.of('retry').length === 1, 'the retry');
		await expectNextAttemptAfter(seen, 1000);
		await expect(drive(sending)).resolves.toMatchObject({status: 'succeeded'});
	});

	test('an unreadable Retry-After falls back to the backoff', async () => {
		const {log, sending} = await start('whenever');
		await drive(sending);
		expect(log.of('retry')[0]!.delay).toBe(0);
	});

	test('a Retry-After above maxRetryAfter stops the send as unresolved after one request', async () => {
		const {seen, store, sending} = await start('61', 503, {limit: 3, baseDelay: 10, maxDelay: 100});
		const result = await drive(sending);

		expect(seen).toHaveLength(1);
		expect(result).toMatchObject({status: 'unresolved', attempts: 1, mayHaveBeenSent: true});
		expect(store.record('order')?.state).toBe('unresolved');
	});

	test('a Retry-After date beyond maxRetryAfter stops the send too', async () => {
		const seen = api(status(503, {'Retry-After': new Date(Date.now() + 10_000).toUTCString()}));
		const client = createClient({store: testStore(), retry: {maxRetryAfter: 5000}});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {order: 'a-1'}});
		const result = await drive(intent.send());

		expect(seen).toHaveLength(1);
		expect(result.status).toBe('unresolved');
	});

	test('a Retry-After equal to maxRetryAfter is honoured', async () => {
		const seen = api(status(503, {'Retry-After': '5'}), HttpResponse.json({ok: true}));
		const client = createClient({store: testStore(), retry: {maxRetryAfter: 5000}});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {order: 'a-1'}});
		const result = await drive(intent.send(), {step: 100});

		expect(seen).toHaveLength(2);
		expect(result.status).toBe('succeeded');
	});
});
