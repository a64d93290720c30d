import type {Page} from 'playwright-core';
import {afterEach, describe, expect, test} from 'vitest';
import {LEASE_MS} from '../../src/core/cross-tab.js';
import type {Intent, IntentResult, SendOnceClient} from '../../src/index.js';
import {indexedDbEntries, openPage, pageEvents, useSite} from './harness.js';

/** Fast retries: a 409 while the server still works is asked again within a few hundred ms. */
const OPTIONS = {retry: {limit: 30, baseDelay: 100, maxDelay: 400}, timeout: 10_000} as const;
const ORDER = {url: '/orders', json: {order: 'o-1', total: 42}} as const;

declare global {
	interface Window {
		/** This tab's client and what the test wants to see of it. */
		tab: {
			name: string;
			client: SendOnceClient;
			/** Records read from the store: a tab waiting on a lease reads one every poll. */
			reads: number;
			/** Full listings of the store: one per resume loop. */
			lists: number;
			/** While set, `list` fetches its answer, then holds it until `until` (a slow IndexedDB). */
			slow?: {what: 'list'; until: Promise<void>; end(): void};
			/** Reads that fetched their answer and are holding it. */
			held: number;
			resumed?: Promise<IntentResult[]>;
			sent?: Promise<IntentResult>;
			/** An intent this tab holds on to. */
			intent?: Intent;
		};
	}
}

/** The page as a browser without Web Locks (Safari before 15.4, some WebViews) shows it. */
function withoutWebLocks(): void {
	Object.defineProperty(Navigator.prototype, 'locks', {configurable: true, get: () => undefined});
}

/** Requests wait here on arrival, before the server claims their key, while the gate is shut. */
let gate: Promise<void> = Promise.resolve();
let openGate: () => void = () => undefined;

function shutGate(): void {
	gate = new Promise(resolve => {
		openGate = resolve;
	});
}

const site = useSite({onArrival: async () => gate});
afterEach(() => {
	openGate();
});

/**
 * Gives `page` a client over the IndexedDB store that names its tab in an `x-tab` header
 * (a session header: sent, never stored) and counts the store's reads and listings.
 */
async function setUpTab(page: Page, name: string, options: typeof OPTIONS | {retry: {limit: number; maxDelay: number}} = OPTIONS): Promise<void> {
	await page.evaluate(async ({name, options}) => {
		const {createClient, indexedDbStore} = await window.loadSendonce();
		const store = indexedDbStore();
		const tab = {name, reads: 0, lists: 0, held: 0} as Window['tab'];
		const slow = async <T>(what: 'list' | 'get', answer: T): Promise<T> => {
			if (tab.slow?.what === what) {
				tab.held++;
				await tab.slow.until;
			}

			return answer;
		};
		tab.client = createClient({
			...options,
			headers: {'x-tab': name},
			onEvent: window.recordEvent,
			store: {
				...store,
				async get(id) {
					tab.reads++;
					return slow('get', await store.get(id));
				},
				async list() {
					tab.lists++;
					return slow('list', await store.list());
				},
			},
		});
		window.tab = tab;
	}, {name, options});
}

async function openTab(name: string, ...initScripts: Array<() => void>): Promise<Page> {
	const page = await openPage(site.context, site.server, ...initScripts);
	await setUpTab(page, name);
	return page;
}

/** `count` tabs in one browser context; the first has stored an intent and been reloaded before sending it. */
async function tabsWithPendingIntent(count: number, ...initScripts: Array<() => void>): Promise<{key: string; pages: Page[]}> {
	const pages = await Promise.all(Array.from({length: count}, async (_, index) => openTab(`tab-${index}`, ...initScripts)));
	const first = pages[0]!;
	const key = await first.evaluate(async order => (await window.tab.client.intent('checkout', order)).key, ORDER);
	await first.reload();
	await setUpTab(first, 'tab-0');
	expect(await indexedDbEntries(first)).toMatchObject({'intent:checkout': {key, state: 'pending', attempts: 0}});
	return {key, pages};
}

async function startResume(page: Page): Promise<void> {
	await page.evaluate(() => {
		window.tab.reads = 0;
		window.tab.resumed = window.tab.client.resume();
	});
}

async function resumed(page: Page): Promise<IntentResult[]> {
	return page.evaluate(async () => window.tab.resumed!);
}

/** The tab whose request the server saw at `index`. */
async function senderOf(pages: Page[], index: number): Promise<Page> {
	const name = site.server.requests[index]?.headers['x-tab'];
	const names = await Promise.all(pages.map(async page => page.evaluate(() => window.tab.name)));
	const page = pages[names.indexOf(String(name))];
	if (!page) throw new Error(`No tab sent request ${index} (x-tab: ${String(name)})`);
	return page;
}

/** Held and queued requests for the Web Lock of `key`, as the origin's lock manager lists them. */
async function webLock(page: Page, key: string): Promise<{held: number; pending: number}> {
	return page.evaluate(async name => {
		const {held = [], pending = []} = await navigator.locks.query();
		return {held: held.filter(lock => lock.name === name).length, pending: pending.filter(lock => lock.name === name).length};
	}, `sendonce:${key}`);
}

/** The fewest store reads any of `pages` made since its resume started. */
async function fewestReads(pages: Page[]): Promise<number> {
	return Math.min(...await Promise.all(pages.map(async page => page.evaluate(() => window.tab.reads))));
}

/**
 * Every tab resumes at once. The owner's request is held at the server until every other
 * tab has lost the claim and is waiting: queued on the Web Lock, or polling the lease.
 */
async function resumeEverywhere(pages: Page[], key: string, waitingOn: 'web-lock' | 'lease'): Promise<{owner: Page; results: IntentResult[][]}> {
	shutGate();
	const before = site.server.requests.length;
	await Promise.all(pages.map(startResume));
	await expect.poll(() => site.server.requests.length).toBe(before + 1);
	const owner = await senderOf(pages, before);
	const others = pages.filter(page => page !== owner);
	if (waitingOn === 'web-lock') {
		await expect.poll(async () => webLock(owner, key)).toEqual({held: 1, pending: others.length});
	} else {
		// A waiting tab reads the record once per poll (every 500 ms): two mean it is waiting on the lease.
		await expect.poll(async () => fewestReads(others), {timeout: 5000}).toBeGreaterThanOrEqual(2);
	}

	expect(site.server.requests).toHaveLength(before + 1);
	openGate();
	return {owner, results: await Promise.all(pages.map(resumed))};
}

async function attemptEvents(pages: Page[]): Promise<number> {
	const events = await Promise.all(pages.map(pageEvents));
	return events.flat().filter(event => event.type === 'attempt').length;
}

/**
 * The owner sent once, succeeding at its first attempt; every tab reports the owner's own
 * result, as the BroadcastChannel carried it; the server worked once; nothing is left stored.
 */
async function expectSentOnceEverywhere(pages: Page[], owner: Page, results: IntentResult[][], key: string): Promise<void> {
	const ownResult = results[pages.indexOf(owner)]!;
	expect(ownResult).toEqual([expect.objectContaining({status: 'succeeded', key, replayed: false, attempts: 1, data: {id: 'order-1', order: 'o-1', effects: 1}})]);
	expect(results).toHaveLength(pages.length);
	for (const result of results) expect(result).toEqual(ownResult);

	expect(site.server.requests).toHaveLength(1);
	expect(site.server.keys).toEqual([key]);
	expect(site.server.effects.get('o-1')).toBe(1);
	expect(site.server.totalEffects).toBe(1);
	expect(await attemptEvents(pages)).toBe(1);
	// With the record went any lease: nothing is left for a later resume to send or wait on.
	await expect.poll(async () => indexedDbEntries(owner)).toEqual({});
}

describe('tabs resuming one interrupted intent at once (Web Locks)', () => {
	test.each([2, 3])('%i tabs: one request reaches the server, and every tab reports its outcome', async count => {
		const {key, pages} = await tabsWithPendingIntent(count);
		const {owner, results} = await resumeEverywhere(pages, key, 'web-lock');

		await expectSentOnceEverywhere(pages, owner, results, key);
		expect(await Promise.all(pages.map(async page => page.evaluate(async () => (await window.tab.client.list()).length)))).toEqual(Array(count).fill(0));
	});

	test('a reload mid-attempt, then three tabs resume: one more request, a replay, and the same outcome in every tab', async () => {
		const pages = await Promise.all(['tab-0', 'tab-1', 'tab-2'].map(async name => openTab(name)));
		const first = pages[0]!;
		shutGate();
		const key = await first.evaluate(async order => {
			const intent = await window.tab.client.intent('checkout', order);
			void intent.send();
			return intent.key;
		}, ORDER);
		await expect.poll(() => site.server.requests.length).toBe(1);
		await first.reload();
		await setUpTab(first, 'tab-0');
		// The server does the work of the interrupted attempt; nobody is left to hear its answer.
		openGate();
		await expect.poll(() => site.server.effects.get('o-1')).toBe(1);
		expect(await indexedDbEntries(first)).toMatchObject({'intent:checkout': {key, state: 'sending', attempts: 1}});

		const {results} = await resumeEverywhere(pages, key, 'web-lock');

		for (const result of results) {
			expect(result).toEqual([expect.objectContaining({status: 'succeeded', key, replayed: true, attempts: 2, data: {id: 'order-1', order: 'o-1', effects: 1}})]);
		}

		expect(results[1]).toEqual(results[0]);
		expect(results[2]).toEqual(results[0]);
		expect(site.server.requests).toHaveLength(2);
		expect(site.server.keys).toEqual([key, key]);
		expect(site.server.requests[1]!.outcome).toBe(201);
		expect(site.server.effects.get('o-1')).toBe(1);
		await expect.poll(async () => indexedDbEntries(first)).toEqual({});
	});
});

describe('tabs resuming one interrupted intent at once, without Web Locks (a lease in the store)', () => {
	test.each([2, 3])('%i tabs: one request reaches the server, and every tab reports its outcome', async count => {
		const {key, pages} = await tabsWithPendingIntent(count, withoutWebLocks);
		expect(await pages[0]!.evaluate(() => navigator.locks)).toBeUndefined();
		const {owner, results} = await resumeEverywhere(pages, key, 'lease');

		await expectSentOnceEverywhere(pages, owner, results, key);
	});
});

describe('the owner tab closed mid-attempt', () => {
	/** The owner stores and sends an intent; the server holds the request while `waiter` starts resuming. */
	async function ownerMidAttempt(owner: Page, waiter: Page): Promise<string> {
		shutGate();
		const key = await owner.evaluate(async order => {
			const intent = await window.tab.client.intent('checkout', order);
			window.tab.sent = intent.send();
			return intent.key;
		}, ORDER);
		await expect.poll(() => site.server.requests.length).toBe(1);
		await startResume(waiter);
		return key;
	}

	/**
	 * The waiter's request reaches the server, and then the server gets to both: it claims the
	 * key for the closed owner's request, whose work is still running when it answers the
	 * waiter 409, and replays its answer to the waiter's next attempts.
	 */
	async function serverCatchesUp(waiter: Page): Promise<IntentResult[]> {
		site.server.faults.push({type: 'slow', ms: 300});
		openGate();
		const results = await resumed(waiter);
		expect(site.server.requests[1]!.outcome).toBe(409);
		return results;
	}

	async function expectTakenOver(waiter: Page, key: string, results: IntentResult[]): Promise<void> {
		// Every attempt counts toward the intent, the owner's and the waiter's 409s included.
		expect(results).toEqual([expect.objectContaining({status: 'succeeded', key, replayed: true, attempts: site.server.requests.length, data: {id: 'order-1', order: 'o-1', effects: 1}})]);
		expect(site.server.effects.get('o-1')).toBe(1);
		expect(site.server.totalEffects).toBe(1);
		expect(new Set(site.server.keys)).toEqual(new Set([key]));
		expect(site.server.requests.map(request => request.headers['x-tab'])).toEqual(['owner', ...Array(site.server.requests.length - 1).fill('waiter')]);
		await expect.poll(async () => indexedDbEntries(waiter)).toEqual({});
	}

	test('without Web Locks: a waiting tab keeps waiting while the lease holds, then takes over with the same key; the server works once', async () => {
		// One clock for the context: it runs on its own, and the test jumps it past the lease.
		await site.context.clock.install();
		const owner = await openTab('owner', withoutWebLocks);
		const waiter = await openTab('waiter', withoutWebLocks);
		const key = await ownerMidAttempt(owner, waiter);
		const {lease} = (await indexedDbEntries(owner))['intent:checkout'] as {lease: {owner: string; until: number}};
		expect(lease).toEqual({owner: expect.any(String), until: expect.any(Number)});
		await expect.poll(async () => fewestReads([waiter]), {timeout: 5000}).toBeGreaterThanOrEqual(2);
		await owner.close();

		// The owner is gone, but its lease has not run out: the waiter polls and sends nothing.
		const polled = await fewestReads([waiter]);
		await expect.poll(async () => fewestReads([waiter]), {timeout: 5000}).toBeGreaterThanOrEqual(polled + 2);
		expect(site.server.requests).toHaveLength(1);
		// The owner's lease, renewed or not (it renews every 3 s while it sends).
		expect(await indexedDbEntries(waiter)).toMatchObject({'intent:checkout': {key, state: 'sending', attempts: 1, lease: {owner: lease.owner}}});

		await site.context.clock.fastForward(LEASE_MS);
		// The waiter still gives a lost outcome message a second (GRACE_MS) before it sends.
		await expect.poll(() => site.server.requests.length, {timeout: 5000}).toBe(2);
		await expectTakenOver(waiter, key, await serverCatchesUp(waiter));
	});

	test('with Web Locks: closing the owner releases its lock, and a waiting tab takes over at once with the same key; the server works once', async () => {
		const owner = await openTab('owner');
		const waiter = await openTab('waiter');
		const key = await ownerMidAttempt(owner, waiter);
		await expect.poll(async () => webLock(waiter, key)).toEqual({held: 1, pending: 1});
		await owner.close();

		// After GRACE_MS (a second for a lost outcome message), well before a lease would have gone stale.
		await expect.poll(() => site.server.requests.length, {timeout: LEASE_MS / 2}).toBe(2);
		expect(await webLock(waiter, key)).toEqual({held: 1, pending: 0});
		await expectTakenOver(waiter, key, await serverCatchesUp(waiter));
	});
});

describe('offline, then online', () => {
	test('while offline the intent waits without spending attempts; back online it is sent once', async () => {
		const page = await openPage(site.context, site.server);
		// A wait longer than the test: only the `online` event can end it.
		await setUpTab(page, 'tab', {retry: {limit: 3, maxDelay: 20_000}});
		await site.context.setOffline(true);
		expect(await page.evaluate(() => navigator.onLine)).toBe(false);

		const key = await page.evaluate(async order => {
			const intent = await window.tab.client.intent('checkout', order);
			window.tab.sent = intent.send();
			return intent.key;
		}, ORDER);
		await expect.poll(async () => (await pageEvents(page)).map(event => event.type)).toEqual(['wait-online']);
		expect(await pageEvents(page)).toEqual([{type: 'wait-online', key, scope: 'checkout', attempt: 0}]);
		expect(await indexedDbEntries(page)).toMatchObject({'intent:checkout': {key, state: 'pending', attempts: 0}});
		expect(site.server.requests).toEqual([]);

		await site.context.setOffline(false);
		const result = await page.evaluate(async () => window.tab.sent!);

		expect(result).toMatchObject({status: 'succeeded', key, replayed: false, attempts: 1});
		expect(site.server.keys).toEqual([key]);
		expect(site.server.effects.get('o-1')).toBe(1);
		expect((await pageEvents(page)).map(event => event.type)).toEqual(['wait-online', 'attempt', 'settled']);
		await expect.poll(async () => indexedDbEntries(page)).toEqual({});
	});
});

describe('resume on lifecycle events', () => {
	/** A tab that resumed once (nothing to do), and another tab that then stored an intent without sending it. */
	async function resumedTabAndPendingIntent(): Promise<{page: Page; key: string}> {
		const page = await openTab('resumer');
		expect(await page.evaluate(async () => window.tab.client.resume())).toEqual([]);
		const other = await openTab('creator');
		const key = await other.evaluate(async order => (await window.tab.client.intent('checkout', order)).key, ORDER);
		expect(await page.evaluate(() => window.tab.lists)).toBe(1);
		expect(site.server.requests).toEqual([]);
		return {page, key};
	}

	test.each(['online', 'pageshow', 'visibilitychange'])('%s (the page visible) resumes the intent another tab left pending', async trigger => {
		const {page, key} = await resumedTabAndPendingIntent();
		await page.evaluate(trigger => {
			if (trigger === 'online') window.dispatchEvent(new Event('online'));
			if (trigger === 'pageshow') window.dispatchEvent(new PageTransitionEvent('pageshow', {persisted: true}));
			if (trigger === 'visibilitychange') {
				if (document.visibilityState !== 'visible') throw new Error(`The page is ${document.visibilityState}`);
				document.dispatchEvent(new Event('visibilitychange'));
			}
		}, trigger);

		await expect.poll(async () => (await pageEvents(page)).filter(event => event.type === 'settled')).toEqual([
			{type: 'settled', key, scope: 'checkout', attempt: 1, outcome: 'succeeded', status: 201},
		]);
		expect(site.server.keys).toEqual([key]);
		expect(site.server.requests[0]!.headers['x-tab']).toBe('resumer');
		expect(site.server.effects.get('o-1')).toBe(1);
		await expect.poll(async () => indexedDbEntries(page)).toEqual({});
	});

	test('three triggers at once make one resume loop and one request', async () => {
		const {page, key} = await resumedTabAndPendingIntent();
		await page.evaluate(() => {
			window.dispatchEvent(new Event('online'));
			window.dispatchEvent(new PageTransitionEvent('pageshow', {persisted: true}));
			document.dispatchEvent(new Event('visibilitychange'));
		});

		await expect.poll(async () => (await pageEvents(page)).filter(event => event.type === 'settled')).toHaveLength(1);
		expect(await page.evaluate(() => window.tab.lists)).toBe(2);
		expect((await pageEvents(page)).filter(event => event.type === 'attempt')).toEqual([{type: 'attempt', key, scope: 'checkout', attempt: 1}]);
		expect(site.server.keys).toEqual([key]);
		expect(site.server.effects.get('o-1')).toBe(1);
		await expect.poll(async () => indexedDbEntries(page)).toEqual({});
	});
});

describe('a tab that starts sending as the owner finishes', () => {
	test('resume(), whose listing of the store was answered before the owner settled the intent and is slow to arrive: no second request, and the owner\'s outcome', async () => {
		const {key, pages: [owner, late]} = await tabsWithPendingIntent(2);
		await late!.evaluate(async () => {
			let end!: () => void;
			const until = new Promise<void>(resolve => {
				end = resolve;
			});
			window.tab.slow = {what: 'list', until, end};
			window.tab.resumed = window.tab.client.resume();
		});
		// The late tab has its answer, with the intent still pending in it, on its way.
		await expect.poll(async () => late!.evaluate(() => window.tab.held)).toBe(1);

		await startResume(owner!);
		const ownResult = await resumed(owner!);
		expect(ownResult).toEqual([expect.objectContaining({status: 'succeeded', key, replayed: false, attempts: 1})]);
		await expect.poll(async () => indexedDbEntries(owner!)).toEqual({});

		await late!.evaluate(() => {
			window.tab.slow!.end();
		});
		expect(await resumed(late!)).toEqual(ownResult);
		expect(site.server.requests).toHaveLength(1);
		expect(site.server.keys).toEqual([key]);
		expect(site.server.effects.get('o-1')).toBe(1);
		expect(await attemptEvents([owner!, late!])).toBe(1);
		await expect.poll(async () => indexedDbEntries(owner!)).toEqual({});
	});

	test('send() on an intent this tab read before another tab settled it: no request, and the owner\'s outcome', async () => {
		const {key, pages: [owner, late]} = await tabsWithPendingIntent(2);
		// The late tab holds the intent as it was: pending, never sent.
		expect(await late!.evaluate(async () => {
			window.tab.intent = await window.tab.client.get('checkout');
			return window.tab.intent?.state;
		})).toBe('pending');

		await startResume(owner!);
		const ownResult = await resumed(owner!);
		expect(ownResult).toEqual([expect.objectContaining({status: 'succeeded', key, attempts: 1})]);

		// Its write-ahead finds the record gone, in the same transaction that would have sent it.
		expect(await late!.evaluate(async () => [await window.tab.intent!.send()])).toEqual(ownResult);
		expect(site.server.requests).toHaveLength(1);
		expect(await attemptEvents([owner!, late!])).toBe(1);
		await expect.poll(async () => indexedDbEntries(late!)).toEqual({});
	});
});
