import fc from 'fast-check';
import {HttpResponse} from 'msw';
import {afterEach, beforeEach, describe, expect, test, vi} from 'vitest';
import {backoffDelay} from '../../src/core/backoff.js';
import {createClient} from '../../src/index.js';
import {drive, eventLog, flush, status, testStore, until, URL_ORDERS, useMsw} from './helpers.js';

const {api} = useMsw();

describe('backoffDelay()', () => {
	const retry = {baseDelay: 300, maxDelay: 20_000};

	test('draws 0 when the random source gives 0', () => {
		expect(backoffDelay(1, retry, () => 0)).toBe(0);
		expect(backoffDelay(10, retry, () => 0)).toBe(0);
	});

	test('stays below baseDelay · 2^n', () => {
		const top = () => 0.999_999_9;
		expect(backoffDelay(0, retry, top)).toBe(299);
		expect(backoffDelay(1, retry, top)).toBe(599);
		expect(backoffDelay(2, retry, top)).toBe(1199);
		expect(backoffDelay(3, retry, top)).toBe(2399);
	});

	test('is capped at maxDelay', () => {
		expect(backoffDelay(7, retry, () => 0.999_999_9)).toBe(19_999);
		expect(backoffDelay(40, retry, () => 0.999_999_9)).toBe(19_999);
		expect(backoffDelay(1000, retry, () => 0.5)).toBe(10_000);
	});

	test('scales the random draw over the whole range (full jitter)', () => {
		expect(backoffDelay(2, retry, () => 0.5)).toBe(600);
		expect(backoffDelay(2, retry, () => 0.25)).toBe(300);
	});

	test('is always a whole number in [0, min(maxDelay, baseDelay · 2^n)]', () => {
		fc.assert(fc.property(
			fc.integer({min: 0, max: 60}),
			fc.integer({min: 0, max: 5000}),
			fc.integer({min: 0, max: 100_000}),
			fc.double({min: 0, max: 1, maxExcluded: true, noNaN: true}),
			(n, baseDelay, extra, draw) => {
				const maxDelay = baseDelay + extra;
				const delay = backoffDelay(n, {baseDelay, maxDelay}, () => draw);
				expect(Number.isInteger(delay)).toBe(true);
				expect(delay).toBeGreaterThanOrEqual(0);
				expect(delay).toBeLessThanOrEqual(Math.min(maxDelay, baseDelay * (2 ** n)));
			},
		));
	});

	test('uses Math.random by default', () => {
		const random = vi.spyOn(Math, 'random').mockReturnValue(0.5);
		try {
			expect(backoffDelay(1, retry)).toBe(300);
			expect(random).toHaveBeenCalled();
		} finally {
			random.mockRestore();
		}
	});
});

describe('backoff between attempts', () => {
	beforeEach(() => {
		vi.useFakeTimers();
	});
	afterEach(() => {
		vi.useRealTimers();
		vi.restoreAllMocks();
	});

	test('waits a full-jitter delay that doubles per attempt and stops at maxDelay', async () => {
		vi.spyOn(Math, 'random').mockReturnValue(0.999_999_9);
		const seen = api(status(503));
		const log = eventLog();
		const client = createClient({store: testStore(), retry: {limit: 6, baseDelay: 10, maxDelay: 100}, onEvent: log.onEvent});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {order: 'a-1'}});
		await drive(intent.send(), {step: 1});

		expect(seen).toHaveLength(6);
		// Before attempt n+1: random(0, min(100, 10 · 2^n)).
		expect(log.of('retry').map(event => event.delay)).toEqual([19, 39, 79, 99, 99]);
	});

	test('sends the next attempt when the drawn delay has passed, not before', async () => {
		vi.spyOn(Math, 'random').mockReturnValue(0.5);
		const seen = api(status(503), HttpResponse.json({ok: true}));
		const log = eventLog();
		const client = createClient({store: testStore(), retry: {limit: 3, baseDelay: 100, maxDelay: 1000}, onEvent: log.onEvent});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {order: 'a-1'}});
		const sending = intent.send();
		await until(() => log.of('retry').length === 1, 'the first retry');

		// 0.5 · min(1000, 100 · 2^1) = 100 ms.
		expect(log.of('retry')[0]!.delay).toBe(100);
		await vi.advanceTimersByTimeAsync(99);
		await flush();
		expect(seen).toHaveLength(1);
		await vi.advanceTimersByTimeAsync(1);
		await until(() => seen.length === 2, 'the second request');
		await expect(drive(sending)).resolves.toMatchObject({status: 'succeeded', attempts: 2});
	});

	test('retries at once when the draw is 0', async () => {
		vi.spyOn(Math, 'random').mockReturnValue(0);
		const seen = api(status(503), status(503), HttpResponse.json({ok: true}));
		const log = eventLog();
		const client = createClient({store: testStore(), retry: {limit: 3, baseDelay: 10_000, maxDelay: 20_000}, onEvent: log.onEvent});
		const intent = await client.intent('order', {url: URL_ORDERS, json: {order: 'a-1'}});
		const start = Date.now();
		const sending = intent.send();
		for (let i = 0; i < 20 && seen.length < 3; i++) {
			await flush();
			// Node runs setTimeout(fn, 0) after 1 ms, and so do the fake timers.
			await vi.advanceTimersByTimeAsync(1);
		}

		await expect(sending).resolves.toMatchObject({status: 'succeeded', attempts: 3});
		expect(log.of('retry').map(event => event.delay)).toEqual([0, 0]);
		expect(Date.now() - start).toBeLessThan(10);
	});
});
