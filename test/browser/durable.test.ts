import {describe, expect, test} from 'vitest';
import {indexedDbEntries, launchProfile, openPage, profileDir, useSite} from './harness.js';

/** Fast retries: a 409 while the server still works is asked again within a few hundred ms. */
const OPTIONS = {retry: {limit: 30, baseDelay: 100, maxDelay: 400}, timeout: 10_000} as const;
const ORDER = {url: '/orders', json: {order: 'o-1', total: 42}} as const;

const site = useSite();

describe('IndexedDB keeps the intent across a reload', () => {
	test('a reload while the first attempt is in flight: the next page resumes it with the same key and the server works once', async () => {
		// The work goes on until the test has reloaded the page and read its store.
		let workEnds!: () => void;
		const reloaded = new Promise<void>(resolve => {
			workEnds = resolve;
		});
		site.server.faults.push({type: 'hold', until: reloaded});
		const page = await openPage(site.context, site.server);
		const key = await page.evaluate(async ({options, order}) => {
			const {createClient} = await window.loadSendonce();
			const client = createClient(options);
			const intent = await client.intent('checkout', order);
			void intent.send();
			return intent.key;
		}, {options: OPTIONS, order: ORDER});

		await expect.poll(() => site.server.requests.length).toBe(1);
		await page.reload();
		expect(site.server.effects.get('o-1') ?? 0).toBe(0);

		const stored = await indexedDbEntries(page);
		expect(Object.keys(stored)).toEqual(['intent:checkout']);
		expect(stored['intent:checkout']).toMatchObject({key, state: 'sending', attempts: 1});
		workEnds();

		const {listed, results, durable} = await page.evaluate(async options => {
			const {createClient} = await window.loadSendonce();
			const client = createClient(options);
			const listed = (await client.list()).map(({key, scope, state, attempts}) => ({key, scope, state, attempts}));
			return {listed, results: await client.resume(), durable: await client.durable};
		}, OPTIONS);

		expect(durable).toBe(true);
		expect(listed).toEqual([{key, scope: 'checkout', state: 'sending', attempts: 1}]);
		expect(results).toMatchObject([{status: 'succeeded', key, replayed: true, data: {order: 'o-1', effects: 1}}]);
		expect(site.server.effects.get('o-1')).toBe(1);
		expect(site.server.requests.length).toBeGreaterThanOrEqual(2);
		expect(new Set(site.server.keys)).toEqual(new Set([key]));
		expect(new Set(site.server.requests.map(request => request.body))).toEqual(new Set(['{"order":"o-1","total":42}']));
		await expect.poll(async () => indexedDbEntries(page)).toEqual({});
	});

	test('a reload between intent() and send(): the intent is still pending with its key and is sent once', async () => {
		const page = await openPage(site.context, site.server);
		const key = await page.evaluate(async ({options, order}) => {
			const {createClient} = await window.loadSendonce();
			const intent = await createClient(options).intent('checkout', order);
			return intent.key;
		}, {options: OPTIONS, order: ORDER});

		await page.reload();
		expect(await indexedDbEntries(page)).toMatchObject({'intent:checkout': {key, state: 'pending', attempts: 0}});
		const {listed, results} = await page.evaluate(async options => {
			const {createClient} = await window.loadSendonce();
			const client = createClient(options);
			const listed = (await client.list()).map(({key, state, attempts, mayHaveBeenSent}) => ({key, state, attempts, mayHaveBeenSent}));
			return {listed, results: await client.resume()};
		}, OPTIONS);

		expect(listed).toEqual([{key, state: 'pending', attempts: 0, mayHaveBeenSent: false}]);
		expect(results).toMatchObject([{status: 'succeeded', key, replayed: false, attempts: 1}]);
		expect(site.server.keys).toEqual([key]);
		expect(site.server.effects.get('o-1')).toBe(1);
		await expect.poll(async () => indexedDbEntries(page)).toEqual({});
	});
});

describe('IndexedDB keeps the intent across a browser restart', () => {
	test('closing and relaunching the browser on the same profile: the intent resumes with the same key', async () => {
		const profile = await profileDir();
		try {
			const first = await launchProfile(profile.path);
			const before = await openPage(first, site.server);
			const key = await before.evaluate(async ({options, order}) => {
				const {createClient} = await window.loadSendonce();
				return (await createClient(options).intent('checkout', order)).key;
			}, {options: OPTIONS, order: ORDER});
			await first.close();

			const second = await launchProfile(profile.path);
			try {
				const after = await openPage(second, site.server);
				expect(await indexedDbEntries(after)).toMatchObject({'intent:checkout': {key, state: 'pending'}});
				const {listed, results} = await after.evaluate(async options => {
					const {createClient} = await window.loadSendonce();
					const client = createClient(options);
					const listed = (await client.list()).map(intent => intent.key);
					return {listed, results: await client.resume()};
				}, OPTIONS);

				expect(listed).toEqual([key]);
				expect(results).toMatchObject([{status: 'succeeded', key}]);
				expect(site.server.keys).toEqual([key]);
				expect(site.server.effects.get('o-1')).toBe(1);
				await expect.poll(async () => indexedDbEntries(after)).toEqual({});
			} finally {
				await second.close();
			}
		} finally {
			await profile.remove();
		}
	});
});

describe('indexedDbStore in Chromium', () => {
	test('update is atomic across two tabs of the same origin', async () => {
		const pages = [await openPage(site.context, site.server), await openPage(site.context, site.server)];
		await Promise.all(pages.map(async page => page.evaluate(async () => {
			const {indexedDbStore} = await window.loadSendonce();
			const store = indexedDbStore();
			await Promise.all(Array.from({length: 25}, async () => store.update!('lease:order', old => (typeof old === 'number' ? old + 1 : 1))));
		})));

		expect(await indexedDbEntries(pages[0]!)).toEqual({'lease:order': 50});
		expect(site.server.requests).toEqual([]);
	});
});

describe('an idle tab blocks no one', () => {
	/** Runs in a page: another tab's upgrade or delete, and whether it was blocked by a connection left open. */
	const versionChange = async (page: import('playwright-core').Page, what: 'upgrade' | 'delete') => page.evaluate(async what => new Promise<string>(resolve => {
		const request = what === 'upgrade' ? indexedDB.open('sendonce', 10) : indexedDB.deleteDatabase('sendonce');
		request.onblocked = () => resolve('blocked');
		request.onerror = () => resolve('error');
		request.onsuccess = () => {
			if (what === 'upgrade') (request as IDBOpenDBRequest).result.close();
			resolve('done');
		};
	}), what);

	test('its connection closes for another tab\'s upgrade and deleteDatabase (a sign-out), and it stores and sends its next intent', async () => {
		const idle = await openPage(site.context, site.server);
		const key = await idle.evaluate(async options => {
			const {createClient} = await window.loadSendonce();
			(window as unknown as {client: unknown}).client = createClient(options);
			return (await (window as unknown as {client: import('../../src/index.js').SendOnceClient}).client.intent('checkout', {url: '/orders', json: {order: 'o-1'}})).key;
		}, OPTIONS);
		const other = await openPage(site.context, site.server);

		expect(await versionChange(other, 'upgrade')).toBe('done');
		// Upgraded by the other tab, the database still holds the intent, and the idle tab reads it.
		expect(await idle.evaluate(async () => (await (window as unknown as {client: import('../../src/index.js').SendOnceClient}).client.list()).map(intent => intent.key))).toEqual([key]);
		expect(await versionChange(other, 'delete')).toBe('done');

		const result = await idle.evaluate(async () => (window as unknown as {client: import('../../src/index.js').SendOnceClient}).client.send('contact', {url: '/orders', json: {order: 'o-2'}}));
		expect(result).toMatchObject({status: 'succeeded'});
		expect(site.server.effects.get('o-2')).toBe(1);
		expect(await versionChange(other, 'delete')).toBe('done');
	});
});
