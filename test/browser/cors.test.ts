import type {Page} from 'playwright-core';
import {afterAll, beforeAll, beforeEach, describe, expect, test} from 'vitest';
import {CorsProxy, type CorsPolicy} from '../server/cors-proxy.js';
import {openPage, pageEvents, useSite} from './harness.js';

/*
 * The page on one origin, the API on another (issue 11): with the headers sendonce reads
 * exposed, without them, and with a preflight that refuses the key.
 */

/*
 * Full jitter draws each backoff from [0, 200 ms): twelve retries summed under the 900 ms the
 * slow work outlasts the first attempt often enough to fail CI. Forty retries average 4 s, so
 * running out before the work ends would take a sum eight standard deviations low.
 */
const OPTIONS = {timeout: 300, retry: {limit: 40, baseDelay: 50, maxDelay: 200, budget: false}} as const;

// 409s ask the client to wait a second; the first attempt's work takes longer than it waits.
const site = useSite({conflictRetryAfter: 1});
let api: CorsProxy;
beforeAll(async () => {
	api = await new CorsProxy(site.server.url, {allowOrigin: '*', allowHeaders: [], exposeHeaders: []}).listen();
});
afterAll(async () => api?.close());

const FULL: Omit<CorsPolicy, 'allowOrigin'> = {allowHeaders: ['content-type', 'idempotency-key'], exposeHeaders: ['idempotent-replayed', 'retry-after']};
beforeEach(() => {
	api.policy = {allowOrigin: site.server.url, ...FULL};
	api.preflights.length = 0;
});

/** A slow first attempt: it times out, the retries meet 409s, then the stored answer. */
async function sendThroughSlowWork(page: Page) {
	site.server.faults.push({type: 'slow', ms: 1200});
	return page.evaluate(async ({options, url}) => {
		const {createClient} = await window.loadSendonce();
		const delays: number[] = [];
		const client = createClient({...options, onEvent(event) {
			window.recordEvent(event);
			if (event.type === 'retry' && event.status === 409) delays.push(event.delay);
		}});
		const intent = await client.intent('checkout', {url, json: {order: 'o-cors'}});
		const result = await intent.send();
		return {key: intent.key, result, delays};
	}, {options: OPTIONS, url: `${api.url}/orders`});
}

describe('a page and its API on two origins', () => {
	test('with Idempotent-Replayed and Retry-After exposed: the replay reads as replayed, and Retry-After paces the retries', async () => {
		const page = await openPage(site.context, site.server);
		const {key, result, delays} = await sendThroughSlowWork(page);

		expect(result).toMatchObject({status: 'succeeded', replayed: true});
		expect(delays.length).toBeGreaterThan(0);
		expect(delays.every(delay => delay === 1000)).toBe(true);
		expect(site.server.effects.get('o-cors')).toBe(1);
		expect(new Set(site.server.keys)).toEqual(new Set([key]));
		expect((await pageEvents(page)).filter(event => event.type === 'cors-headers-hidden')).toEqual([]);
	});

	test('with nothing exposed: still one effect, the backoff paces, and an event says which headers are hidden', async () => {
		api.policy = {allowOrigin: site.server.url, allowHeaders: FULL.allowHeaders, exposeHeaders: []};
		const page = await openPage(site.context, site.server);
		const {key, result, delays} = await sendThroughSlowWork(page);

		expect(result).toMatchObject({status: 'succeeded', replayed: false});
		expect(delays.length).toBeGreaterThan(0);
		expect(delays.every(delay => delay < 1000)).toBe(true);
		expect(site.server.effects.get('o-cors')).toBe(1);
		expect(new Set(site.server.keys)).toEqual(new Set([key]));
		const hidden = (await pageEvents(page)).filter(event => event.type === 'cors-headers-hidden') as unknown as Array<{header: string; origin: string}>;
		expect(hidden.map(event => event.header).sort()).toEqual(['idempotent-replayed', 'retry-after']);
		expect(hidden[0]!.origin).toBe(api.url);
	});

	test('a preflight that refuses Idempotency-Key: nothing reaches the server, and the error names the header', async () => {
		api.policy = {allowOrigin: site.server.url, allowHeaders: ['content-type'], exposeHeaders: FULL.exposeHeaders};
		const page = await openPage(site.context, site.server);
		const outcome = await page.evaluate(async ({options, url}) => {
			const {createClient} = await window.loadSendonce();
			const client = createClient({...options, retry: {...options.retry, limit: 2}});
			const intent = await client.intent('checkout', {url, json: {order: 'o-refused'}});
			const result = await intent.send();
			const error = result.status === 'unresolved' ? result.error as Error : undefined;
			return {status: result.status, reason: result.status === 'unresolved' ? result.reason : undefined, name: error?.name, message: error?.message};
		}, {options: OPTIONS, url: `${api.url}/orders`});

		expect(outcome).toMatchObject({status: 'unresolved', reason: 'exhausted', name: 'CorsError', message: expect.stringMatching(/`Idempotency-Key`.*Access-Control-Allow-Headers/)});
		expect(api.preflights.every(preflight => !preflight.allowed)).toBe(true);
		expect(site.server.requests.filter(request => request.method === 'POST')).toEqual([]);
	});
});
