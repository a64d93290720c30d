import {HttpResponse} from 'msw';
import {afterEach, beforeEach, describe, expect, test, vi} from 'vitest';
import {createRetryBudget, NO_RETRY_INCREMENT, RETRY_COST, TIMEOUT_RETRY_COST} from '../../src/core/budget.js';
import {createClient, type ClientOptions, type SendOnceClient} from '../../src/index.js';
import {drive, networkError, status, testStore, URL_ORDERS, useMsw} from './helpers.js';

const {api} = useMsw();

describe('createRetryBudget()', () => {
	test("uses AWS SDK v3 standard mode's costs", () => {
		expect(RETRY_COST).toBe(5);
		expect(TIMEOUT_RETRY_COST).toBe(10);
		expect(NO_RETRY_INCREMENT).toBe(1);
	});

	test('pays for retries until the bucket is empty', () => {
		const budget = createRetryBudget(12);
		expect(budget.take(5)).toBe(true);
		expect(budget.take(5)).toBe(true);
		expect(budget.tokens).toBe(2);
		expect(budget.take(5)).toBe(false);
		expect(budget.tokens).toBe(2);
	});

	test('a success gives back what its last retry cost', () => {
		const budget = createRetryBudget(20);
		budget.take(10);
		budget.take(5);
		budget.refund(10);
		expect(budget.tokens).toBe(15);
	});

	test('a success without a retry gives back 1', () => {
		const budget = createRetryBudget(20);
		budget.take(5);
		budget.refund(undefined);
		expect(budget.tokens).toBe(16);
	});

	test('never fills above its capacity', () => {
		const budget = createRetryBudget(20);
		budget.take(5);
		budget.refund(10);
		budget.refund(undefined);
		expect(budget.tokens).toBe(20);
	});

	test('false never runs out', () => {
		const budget = createRetryBudget(false);
		for (let i = 0; i < 1000; i++) expect(budget.take(10)).toBe(true);
	});
});

describe('the client-wide retry budget', () => {
	beforeEach(() => {
		vi.useFakeTimers();
	});
	afterEach(() => {
		vi.useRealTimers();
	});

	function client(options: ClientOptions = {}) {
		return createClient({store: testStore(), retry: {limit: 10, baseDelay: 10, maxDelay: 100, budget: 10}, ...options});
	}

	async function send(sendonce: SendOnceClient, scope: string) {
		const intent = await sendonce.intent(scope, {url: URL_ORDERS, json: {scope}});
		return drive(intent.send());
	}

	test('a down backend stops intents as unresolved with reason budget', async () => {
		const seen = api(status(503));
		const sendonce = client();

		// 10 tokens pay for two retries after a status (5 each).
		const first = await send(sendonce, 'a');
		expect(first).toMatchObject({status: 'unresolved', reason: 'budget', attempts: 3, mayHaveBeenSent: true});
		expect(seen).toHaveLength(3);

		// The bucket is empty: the next intent gets its first attempt and no retry.
		const second = await send(sendonce, 'b');
		expect(second).toMatchObject({status: 'unresolved', reason: 'budget', attempts: 1});
		expect(seen).toHaveLength(4);
	});

	test('a retry after a network error costs 10', async () => {
		const seen = api(networkError);
		const result = await send(client(), 'a');

		expect(result).toMatchObject({status: 'unresolved', reason: 'budget', attempts: 2});
		expect(seen).toHaveLength(2);
	});

	test('a retry after a timeout costs 10', async () => {
		const seen = api(async () => new Promise<Response>(() => undefined));
		const result = await send(client({timeout: 100}), 'a');

		expect(result).toMatchObject({status: 'unresolved', reason: 'budget', attempts: 2});
		expect(seen).toHaveLength(2);
	});

	test('an intent stopped by the budget stays stored', async () => {
		api(status(503));
		const store = testStore();
		const result = await send(client({store}), 'a');

		expect(result.status).toBe('unresolved');
		expect(store.record('a')).toMatchObject({state: 'unresolved', reason: 'budget', attempts: 3});
	});

	test('budget: false never stops a send', async () => {
		const seen = api(status(503));
		const sendonce = client({retry: {limit: 4, baseDelay: 10, maxDelay: 100, budget: false}});
		for (const scope of ['a', 'b', 'c', 'd', 'e']) {
			expect(await send(sendonce, scope)).toMatchObject({status: 'unresolved', reason: 'exhausted', attempts: 4});
		}

		expect(seen).toHaveLength(20);
	});

	test('a success after a retry refunds what the retry cost', async () => {
		const seen = api(status(503), HttpResponse.json({ok: true}), status(503));
		const sendonce = client();
		expect(await send(sendonce, 'a')).toMatchObject({status: 'succeeded', attempts: 2});

		// Back to 10 tokens: two more retries before the budget stops the next intent.
		expect(await send(sendonce, 'b')).toMatchObject({status: 'unresolved', reason: 'budget', attempts: 3});
		expect(seen).toHaveLength(5);
	});

	test('a success without a retry refunds one token', async () => {
		let fail = true;
		const seen = api(() => (fail ? new HttpResponse(null, {status: 503}) : HttpResponse.json({ok: true})));
		const sendonce = client({retry: {limit: 10, baseDelay: 10, maxDelay: 100, budget: 9}});

		// 9 tokens: one retry (4 left), then the budget stops it.
		expect(await send(sendonce, 'a')).toMatchObject({reason: 'budget', attempts: 2});
		fail = false;
		expect(await send(sendonce, 'b')).toMatchObject({status: 'succeeded', attempts: 1});
		fail = true;
		// 5 tokens now: exactly one more retry.
		expect(await send(sendonce, 'c')).toMatchObject({reason: 'budget', attempts: 2});
		expect(seen).toHaveLength(5);
	});

	test('refunds never fill the bucket above its capacity', async () => {
		let fail = false;
		api(() => (fail ? new HttpResponse(null, {status: 503}) : HttpResponse.json({ok: true})));
		const sendonce = client();
		for (const scope of ['a', 'b', 'c', 'd', 'e', 'f']) await send(sendonce, scope);
		fail = true;

		expect(await send(sendonce, 'g')).toMatchObject({reason: 'budget', attempts: 3});
	});

	test('the budget is per client', async () => {
		api(status(503));
		await send(client(), 'a');
		expect(await send(client(), 'b')).toMatchObject({reason: 'budget', attempts: 3});
	});
});
