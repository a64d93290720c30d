import {randomUUID} from 'node:crypto';
import ky, {type Hooks} from 'ky';
import pRetry, {AbortError} from 'p-retry';
import {createClient} from '../src/index.js';

/** One retry policy for every variant: only where the key comes from differs. */
export const POLICY = {
	/** Attempts per intent, the first included (ky and p-retry count retries: one less). */
	limit: 5,
	/**
	 * Per attempt, reading the answer included. Well above a fault-free round trip with every
	 * order in flight, so that only the injected slow work times out, even on a busy machine.
	 */
	timeout: 300,
	/**
	 * Full-jitter backoff: before retry n, random(0, min(maxDelay, baseDelay · 2ⁿ)). Four
	 * retries wait 15 × baseDelay on average, longer than slow work outlives the timeout.
	 */
	baseDelay: 30,
	maxDelay: 600,
	/** How long the work takes under a `slow` fault: twice `timeout`, so a retry meets it in flight. */
	slowMs: 600,
} as const;

/** The statuses every variant retries (the indeterminate ones, and 409 "still in flight"). */
export const RETRY_STATUSES = [408, 409, 425, 429, 500, 502, 503, 504];

/** How one intent ended, as its client saw it. */
export type Outcome = 'succeeded' | 'unresolved' | 'failed';

/** Sends intent `index` (an order) to `url` and says how it ended. */
export type Send = (index: number, order: {item: string; order: string; total: number}) => Promise<Outcome>;

export interface Variant {
	id: string;
	label: string;
	/** Fresh client state for one run against `url` (a fresh server). */
	prepare(url: string): Send;
}

function sendonce(id: string, label: string, budget: number | false): Variant {
	return {
		id,
		label,
		prepare(url) {
			const {limit, baseDelay, maxDelay, timeout} = POLICY;
			const client = createClient({store: 'memory', retry: {limit, baseDelay, maxDelay, budget}, timeout});
			return async (index, order) => {
				const intent = await client.intent(`order-${index}`, {url: `${url}/orders/${index}`, json: order});
				const result = await intent.send();
				return result.status === 'succeeded' ? 'succeeded' : result.status === 'failed' ? 'failed' : 'unresolved';
			};
		},
	};
}

/** ky with POST retries switched on and the same backoff as sendonce's. */
function kyWithRetries(hooks: Hooks = {}) {
	const {limit, baseDelay, maxDelay, timeout} = POLICY;
	return ky.create({
		timeout,
		retry: {
			limit: limit - 1,
			methods: ['post'],
			statusCodes: RETRY_STATUSES,
			retryOnTimeout: true,
			delay: retry => baseDelay * 2 ** retry,
			jitter: true,
			backoffLimit: maxDelay,
		},
		hooks,
	});
}

async function settled(request: Promise<unknown>): Promise<Outcome> {
	try {
		await request;
		return 'succeeded';
	} catch {
		return 'unresolved';
	}
}

export const VARIANTS: readonly Variant[] = [
	sendonce('sendonce', 'sendonce (one key per intent, stored first)', false),
	sendonce('sendonce-budget', 'sendonce, default retry budget (500 tokens)', 500),
	{
		id: 'ky-no-key',
		label: 'ky, POST retries on, no key',
		prepare(url) {
			const api = kyWithRetries();
			return async (index, order) => settled(api.post(`${url}/orders/${index}`, {json: order}).json());
		},
	},
	{
		id: 'ky-fresh-key',
		label: 'ky, a new key on every try (beforeRetry)',
		prepare(url) {
			// The classic mistake: the key is made where the request is made, so every retry is a new action.
			const api = kyWithRetries({
				beforeRetry: [({request}) => {
					request.headers.set('Idempotency-Key', randomUUID());
				}],
			});
			return async (index, order) => settled(api.post(`${url}/orders/${index}`, {json: order, headers: {'Idempotency-Key': randomUUID()}}).json());
		},
	},
	{
		id: 'p-retry-fetch',
		label: 'p-retry around fetch, no key',
		prepare(url) {
			const {limit, baseDelay, maxDelay, timeout} = POLICY;
			const retryable = new Set(RETRY_STATUSES);
			return async (index, order) => settled(pRetry(async () => {
				const response = await fetch(`${url}/orders/${index}`, {
					method: 'POST',
					headers: {'content-type': 'application/json'},
					body: JSON.stringify(order),
					signal: AbortSignal.timeout(timeout),
				});
				await response.text();
				if (response.ok) return;
				if (retryable.has(response.status)) throw new Error(`HTTP ${response.status}`);
				throw new AbortError(`HTTP ${response.status}`);
			}, {retries: limit - 1, minTimeout: baseDelay, factor: 2, maxTimeout: maxDelay, randomize: true}));
		},
	},
];
