/**
 * Hostile review of issue 33 (`intent.check()`), round d: real Chromium, several tabs, a page
 * clock that is off, a check held up at the server. Each test states the rule it checks. What it
 * found is fixed: a check says how old its key is by the page's own clock (`age`), so a clock that
 * runs fast cannot make a key that ran look unused; a waiting check waits for the other tab's lock
 * instead of an outcome heard earlier; a check that takes in a closed tab's `sending` record leaves
 * the page showing it unresolved; a check whose record vanished asks the server instead of guessing.
 * The sleeps that remain let real time pass where the server's clock must (no fake timer reaches it),
 * or give a tab the time to misbehave (spin, or hear an outcome). The same attack's tests of the
 * demo's form are in demo.test.ts ("the React form under a second attack"), which builds it once.
 */
import type {Page} from 'playwright-core';
import {describe, expect, test} from 'vitest';
import {openPage, useSite} from './harness.js';

/** While set, a check (a keyed request without a body) waits here before the server reads it. */
let checkGate: Promise<void> | undefined;

const site = useSite({
	checks: true,
	async onArrival({key, body}) {
		if (key !== undefined && body === '' && checkGate) await checkGate;
	},
});

declare global {
	interface Window {
		attack: {
			client: import('../../src/index.js').SendOnceClient;
			intent: import('../../src/index.js').Intent | undefined;
			/** IndexedDB transactions this page opened. */
			transactions: number;
		};
	}
}

const sleep = async (ms: number) => new Promise(resolve => setTimeout(resolve, ms));

function gate(): {release(): void} {
	let release!: () => void;
	checkGate = new Promise<void>(resolve => {
		release = resolve;
	});
	return {
		release() {
			checkGate = undefined;
			release();
		},
	};
}

/** Counts IndexedDB transactions, for a page that must not spin on its store. */
function countTransactions(): void {
	const open = IDBDatabase.prototype.transaction;
	(window as unknown as {idbTransactions: number}).idbTransactions = 0;
	IDBDatabase.prototype.transaction = function (this: IDBDatabase, ...args: Parameters<typeof open>) {
		(window as unknown as {idbTransactions: number}).idbTransactions++;
		return open.apply(this, args);
	} as typeof open;
}

/** A client in `page` (kept on `window.attack`), with `checks: true` and these retry settings. */
async function client(page: Page, retry: {limit: number; baseDelay?: number; maxDelay?: number} = {limit: 1}): Promise<void> {
	await page.evaluate(async retry => {
		const {createClient} = await window.loadSendonce();
		window.attack = {client: createClient({checks: true, retry, timeout: 5000}), intent: undefined, transactions: 0};
	}, retry);
}

/** Makes the `checkout` intent in `page` and sends it; its result's status and the key. */
async function sendNew(page: Page): Promise<{status: string; key: string}> {
	return page.evaluate(async () => {
		const intent = await window.attack.client.intent('checkout', {url: '/orders', json: {order: 'o-1'}});
		window.attack.intent = intent;
		const result = await intent.send();
		return {status: result.status, key: intent.key};
	});
}

/** The `checkout` intent as `page` reads it from the store now. */
async function load(page: Page): Promise<string | undefined> {
	return page.evaluate(async () => {
		window.attack.intent = await window.attack.client.get('checkout');
		return window.attack.intent?.state;
	});
}

async function check(page: Page): Promise<{status: string; reason?: string}> {
	return page.evaluate(async () => {
		const found = await window.attack.intent!.check();
		return {status: found.status, ...'reason' in found ? {reason: found.reason} : {}};
	});
}

const stateIn = async (page: Page) => page.evaluate(() => window.attack.intent?.state);
const checksSeen = () => site.server.requests.filter(request => request.headers['idempotency-check'] !== undefined).length;

describe('clock skew between page and server (the demo\'s and the contract server\'s clockSkew: 0)', () => {
	test.each([1500])('page clock %i ms fast, the order delivered and its reply lost, then the server forgets its keys (a restart of its memory store): a check must not say "not sent"', async skew => {
		const page = await openPage(site.context, site.server);
		if (skew) {
			await page.evaluate(skew => {
				const real = Date.now;
				Date.now = () => real() + skew;
			}, skew);
		}

		await client(page);
		// Chromium resends a request whose connection dropped, once: that resend gets a 503.
		site.server.faults.push({type: 'lose-reply'}, {type: 'error-before', status: 503});
		const sent = await sendNew(page);
		expect(sent.status).toBe('unresolved');
		expect(site.server.totalEffects).toBe(1);

		// Keys lost soon after (the demo's "Forget the stored keys"; a restart of a memory store).
		site.server.forgetKeys();
		// Until the server's clock passes the page's `createdAt`, the server refuses to judge.
		await sleep(skew + 500);
		const found = await check(page);
		// The order was delivered: "not sent" (and the form's "Send it now") would deliver it twice.
		expect(found.status).not.toBe('not-sent');
		expect(site.server.totalEffects).toBe(1);
	});
});

describe('a check waiting for another tab\'s check', () => {
	test('a tab that heard an earlier "unresolved" outcome must wait for the other tab, not spin on its store', async () => {
		const first = await openPage(site.context, site.server);
		const second = await openPage(site.context, site.server, countTransactions);
		await client(first);
		await client(second);
		// The second tab listens for outcomes from here on.
		expect(await load(second)).toBeUndefined();
		site.server.faults.push({type: 'drop-before'}, {type: 'error-before', status: 503});
		const sent = await sendNew(first);
		expect(sent.status).toBe('unresolved');
		// The second tab hears that outcome (unresolved), and takes the intent up from the store.
		await sleep(300);
		expect(await load(second)).toBe('unresolved');

		const held = gate();
		const firstCheck = check(first);
		await expect.poll(checksSeen).toBe(1);
		await second.evaluate(() => {
			(window as unknown as {idbTransactions: number}).idbTransactions = 0;
		});
		const secondCheck = check(second);
		await sleep(1500);
		const transactions = await second.evaluate(() => (window as unknown as {idbTransactions: number}).idbTransactions);
		held.release();
		const [a, b] = await Promise.all([firstCheck, secondCheck]);
		expect({a: a.status, b: b.status}).toEqual({a: 'not-sent', b: 'not-sent'});
		// Waiting 1.5 s for the other tab's check is a lock request and a message: a handful of reads at most.
		expect(transactions).toBeLessThan(20);
	});
});

describe('a check that finds the record `sending` (a tab closed in the middle of its Retry)', () => {
	test('the checking tab must not be left showing "sending" with nothing sending it', async () => {
		const first = await openPage(site.context, site.server);
		const second = await openPage(site.context, site.server);
		await client(first);
		await client(second);
		site.server.faults.push({type: 'drop-before'}, {type: 'error-before', status: 503});
		expect((await sendNew(first)).status).toBe('unresolved');
		expect(await load(second)).toBe('unresolved');

		// The first tab's user presses Retry (a second client there, with a long wait between
		// attempts): the first attempt gets a 503, the record is `sending` while it waits; the tab is closed.
		await client(first, {limit: 30, baseDelay: 3000, maxDelay: 3000});
		site.server.faults.push({type: 'error-before', status: 503});
		const before = site.server.requests.length;
		void first.evaluate(async () => {
			const intent = await window.attack.client.get('checkout');
			await intent!.send();
		}).catch(() => undefined);
		await expect.poll(() => site.server.requests.length).toBe(before + 1);
		await sleep(200);
		await first.close();

		// The second tab's user presses "Check whether it arrived"; the server cannot be reached.
		site.server.faults.push({type: 'error-before', status: 503});
		const found = await check(second);
		// `unknown` (no-answer), or `running` where the closed tab's lock was not yet let go: nothing
		// settled. Or `succeeded`, where Chromium resent the Retry's request on its own as the tab went
		// (a kept-alive connection dropped) and the work was done: the check found it, rightly.
		expect(['unknown', 'running', 'succeeded']).toContain(found.status);
		// A resent request may also arrive after the check was answered (a loaded machine, CI): one
		// effect at most, and one for sure where the check found it done; `unknown` claims neither.
		if (found.status === 'succeeded') expect(site.server.totalEffects).toBe(1);
		else expect(site.server.totalEffects).toBeLessThanOrEqual(1);
		// It shows what the user can act on (unresolved: Retry, Check); the store keeps it for resume().
		expect(await stateIn(second)).toBe(found.status === 'succeeded' ? 'succeeded' : 'unresolved');
	});
});

describe('a check in a tab without BroadcastChannel', () => {
	test('the other tab\'s check closes the key: this tab\'s check waits for it, then must say the same (not-sent), and its Retry must still lead somewhere', async () => {
		const first = await openPage(site.context, site.server);
		const second = await openPage(site.context, site.server, () => {
			// Firefox with cookies blocked, some embedded browsers: no channel between tabs.
			delete (window as {BroadcastChannel?: unknown}).BroadcastChannel;
		});
		await client(first);
		await client(second);
		site.server.faults.push({type: 'drop-before'}, {type: 'error-before', status: 503});
		expect((await sendNew(first)).status).toBe('unresolved');
		expect(await load(second)).toBe('unresolved');

		const held = gate();
		const firstCheck = check(first);
		await expect.poll(checksSeen).toBe(1);
		const secondCheck = check(second);
		await sleep(300);
		held.release();
		const [a, b] = await Promise.all([firstCheck, secondCheck]);
		expect(a.status).toBe('not-sent');
		const retried = await second.evaluate(async () => {
			const result = await window.attack.intent!.send();
			return {status: result.status, state: window.attack.intent!.state};
		});
		// One outcome across tabs: the second tab learns it from the server (its own check, once the
		// record is gone), never guesses; its Retry then gives that settled outcome, and nothing runs.
		expect({b: b.status, retried: retried.status}).toEqual({b: 'not-sent', retried: 'not-sent'});
		expect(site.server.totalEffects).toBe(0);
	});
});

describe('a reload, and a clear() in another tab, in the middle of a check', () => {
	test('reload while the check is at the server (it closes the key after the page left): the reloaded page\'s Retry and Check both say not-sent, nothing ran', async () => {
		const page = await openPage(site.context, site.server);
		await client(page);
		site.server.faults.push({type: 'drop-before'}, {type: 'error-before', status: 503});
		const {key} = await sendNew(page);
		const held = gate();
		void check(page).catch(() => undefined);
		await expect.poll(checksSeen).toBe(1);
		await page.reload();
		held.release();
		await sleep(300);
		await client(page);
		expect(await load(page)).toBe('unresolved');
		const retried = await page.evaluate(async () => (await window.attack.intent!.send()).status);
		expect({retried, effects: site.server.totalEffects, keys: [...new Set(site.server.keys)]}).toEqual({retried: 'not-sent', effects: 0, keys: [key]});
	});

	test('client.clear() in another tab while this tab\'s check of a delivered order is at the server: this tab says succeeded', async () => {
		const first = await openPage(site.context, site.server);
		const second = await openPage(site.context, site.server);
		await client(first);
		await client(second);
		site.server.faults.push({type: 'lose-reply'}, {type: 'error-before', status: 503});
		await sendNew(first);
		expect(site.server.totalEffects).toBe(1);
		expect(await load(second)).toBe('unresolved');
		const held = gate();
		const checked = check(second);
		await expect.poll(checksSeen).toBe(1);
		await first.evaluate(async () => window.attack.client.clear());
		held.release();
		expect((await checked).status).toBe('succeeded');
		expect(site.server.totalEffects).toBe(1);
	});
});

describe('tabs without Web Locks (a lease in the IndexedDB record)', () => {
	test('one tab checks while the other retries: one outcome in both, nothing ran twice', async () => {
		const noLocks = () => {
			Object.defineProperty(navigator, 'locks', {value: undefined, configurable: true});
		};
		const first = await openPage(site.context, site.server, noLocks);
		const second = await openPage(site.context, site.server, noLocks);
		await client(first);
		await client(second, {limit: 3, baseDelay: 100, maxDelay: 200});
		site.server.faults.push({type: 'drop-before'}, {type: 'error-before', status: 503});
		await sendNew(first);
		expect(await load(second)).toBe('unresolved');
		const [a, b] = await Promise.all([check(first), second.evaluate(async () => (await window.attack.intent!.send()).status)]);
		const settledA = a.status === 'running' ? (await check(first)).status : a.status;
		expect([settledA, b]).toContain(b);
		expect(settledA).toBe(b);
		expect(site.server.totalEffects).toBe(b === 'succeeded' ? 1 : 0);
	});
});
