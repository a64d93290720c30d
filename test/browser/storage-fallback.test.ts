import type {Page} from 'playwright-core';
import {describe, expect, test} from 'vitest';
import {indexedDbEntries, openPage, pageEvents, putIntoIndexedDb, sessionEntries, useSite} from './harness.js';

const OPTIONS = {retry: {limit: 5, baseDelay: 50, maxDelay: 200}, timeout: 10_000} as const;
const ORDER = {url: '/orders', json: {order: 'o-1'}} as const;

/**
 * What init scripts do to the page's storage before any of its scripts run. Arrow functions:
 * Playwright sends the source text, and method shorthand is not an expression.
 */
const breakStorage = {
	removeIndexedDb: () => {
		delete (window as {indexedDB?: IDBFactory}).indexedDB;
	},
	// What Firefox's private mode did: opening works, the first write throws.
	refuseIndexedDbWrites: () => {
		IDBObjectStore.prototype.put = () => {
			throw new DOMException('A mutation operation was attempted on a database that did not allow mutations.', 'InvalidStateError');
		};
	},
	// What a sandboxed iframe or blocked site data does.
	blockSessionStorage: () => {
		Object.defineProperty(window, 'sessionStorage', {
			configurable: true,
			get() {
				throw new DOMException('Failed to read the \'sessionStorage\' property from \'Window\': Access is denied for this document.', 'SecurityError');
			},
		});
	},
};

const site = useSite();

/** Creates the intent in a fresh client with the default store (`'auto'`). */
async function createIntent(page: Page): Promise<{key: string; durable: boolean}> {
	return page.evaluate(async ({options, order}) => {
		const {createClient} = await window.loadSendonce();
		const client = createClient({...options, onEvent: window.recordEvent});
		const intent = await client.intent('checkout', order);
		return {key: intent.key, durable: await client.durable};
	}, {options: OPTIONS, order: ORDER});
}

/** Lists and resumes in a fresh client with the default store. */
async function resumeAll(page: Page) {
	return page.evaluate(async options => {
		const {createClient} = await window.loadSendonce();
		const client = createClient({...options, onEvent: window.recordEvent});
		const listed = (await client.list()).map(({key, state}) => ({key, state}));
		return {listed, results: await client.resume(), durable: await client.durable};
	}, OPTIONS);
}

describe('auto falls back to sessionStorage', () => {
	test.each([
		['missing', breakStorage.removeIndexedDb, /IndexedDB is not available/],
		['refusing writes', breakStorage.refuseIndexedDbWrites, /did not allow mutations/],
	] as const)('IndexedDB %s: store-degraded to session, durable, and the intent survives a reload', async (_case, breakIt, why) => {
		const page = await openPage(site.context, site.server, breakIt);
		const {key, durable} = await createIntent(page);

		expect(durable).toBe(true);
		expect(await pageEvents(page)).toEqual([{
			type: 'store-degraded',
			store: 'session',
			error: {name: 'StoreError', code: 'STORE_UNAVAILABLE', message: expect.stringMatching(why)},
		}]);
		const stored = await sessionEntries(page);
		expect(Object.keys(stored)).toEqual(['sendonce:intent:checkout']);
		expect(JSON.parse(stored['sendonce:intent:checkout']!)).toMatchObject({key, state: 'pending'});

		await page.reload();
		const {listed, results} = await resumeAll(page);
		expect(listed).toEqual([{key, state: 'pending'}]);
		expect(results).toMatchObject([{status: 'succeeded', key}]);
		expect(site.server.keys).toEqual([key]);
		expect(site.server.effects.get('o-1')).toBe(1);
		expect(await sessionEntries(page)).toEqual({});
	});
});

describe('auto falls back to memory', () => {
	test('neither IndexedDB nor sessionStorage: memory, not durable, store-degraded to memory', async () => {
		const page = await openPage(site.context, site.server, breakStorage.refuseIndexedDbWrites, breakStorage.blockSessionStorage);
		const {key, durable} = await createIntent(page);

		expect(durable).toBe(false);
		expect(await pageEvents(page)).toEqual([{
			type: 'store-degraded',
			store: 'memory',
			error: {name: 'StoreError', code: 'STORE_UNAVAILABLE', message: expect.stringMatching(/IndexedDB cannot be used.*sessionStorage cannot be used/)},
		}]);

		// Nothing outlives the page: the next one has no intent to resume.
		await page.reload();
		const {listed, results} = await resumeAll(page);
		expect(listed).toEqual([]);
		expect(results).toEqual([]);
		expect(site.server.requests).toEqual([]);
		expect(key).toMatch(/^[\da-f-]{36}$/);
	});

	test('a forced store that cannot work rejects with StoreError STORE_UNAVAILABLE', async () => {
		const page = await openPage(site.context, site.server, breakStorage.removeIndexedDb, breakStorage.blockSessionStorage);
		const errors = await page.evaluate(async options => {
			const {createClient} = await window.loadSendonce();
			return Promise.all((['indexeddb', 'session'] as const).map(async store => {
				const client = createClient({...options, store});
				return client.intent('checkout', {url: '/orders', json: {order: 'o-1'}}).then(
					() => undefined,
					(error: {name: string; code: string}) => ({name: error.name, code: error.code}),
				);
			}));
		}, OPTIONS);

		expect(errors).toEqual([{name: 'StoreError', code: 'STORE_UNAVAILABLE'}, {name: 'StoreError', code: 'STORE_UNAVAILABLE'}]);
		expect(site.server.requests).toEqual([]);
	});
});

describe('a corrupt record in IndexedDB', () => {
	test('is skipped, reported as store-error, set aside and never sent', async () => {
		const page = await openPage(site.context, site.server);
		// Version 1 by its `v`, but without the fields a version 1 record has.
		const garbage = {v: 1, key: 'k-garbage', scope: 'checkout', state: 'pending', request: {url: '/orders'}};
		await putIntoIndexedDb(page, 'intent:checkout', garbage);

		const {listed, results} = await resumeAll(page);

		expect(listed).toEqual([]);
		expect(results).toEqual([]);
		expect(site.server.requests).toEqual([]);
		expect(await pageEvents(page)).toEqual([{type: 'store-error', scope: 'checkout', error: expect.objectContaining({name: 'StoreError', code: 'STORE_CORRUPT'})}]);
		expect(await indexedDbEntries(page)).toEqual({
			'set-aside:intent:checkout': {setAside: true, at: expect.any(Number), problem: expect.stringMatching(/^(request|fingerprint|attempts)/), value: garbage},
		});
	});
});
