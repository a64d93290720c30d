import {afterEach, expect, onTestFinished, test, vi} from 'vitest';
import {createFetch} from '../../../src/integrations/fetch.js';
import {createClient, memoryStore, OutcomeUnknownError, type IntentStore} from '../../../src/index.js';
import {fast, useApiServer} from '../api-server.js';

/*
 * A fourth review: a page holds an intent as it last saw it (pending, never attempted) while
 * another tab sends it. Nothing this page decides or writes may rest on its older copy: the
 * user would hear "not sent" for an order that may have gone through, and press again.
 */

const site = useApiServer();
afterEach(() => {
	vi.useRealTimers();
});

const shared = () => ({...memoryStore(), shared: true}) satisfies IntentStore;
const order = (id: string) => ({url: `${site.server.url}/orders`, json: {order: id}});

/** Another tab sends the intent: the work is done, the reply lost, then its retries run out on 503s. */
async function sentElsewhere(store: IntentStore): Promise<void> {
	site.server.faults.push({type: 'lose-reply'}, {type: 'error-before', status: 503});
	const other = createClient({...fast, store, retry: {...fast.retry, limit: 2}});
	expect(await (await other.get('checkout'))!.send()).toMatchObject({status: 'unresolved', attempts: 2});
}

/** Another tab sent the intent and closed mid-send: stored as sending, one attempt, no lease. */
async function leftMidSend(store: IntentStore): Promise<void> {
	const stored = await store.get('intent:checkout') as Record<string, unknown>;
	await store.set('intent:checkout', {...stored, state: 'sending', attempts: 1, updatedAt: Date.now()});
}

/** The server holds the work of the next request until the returned function is called. */
function holdNextWork(): () => void {
	let release!: () => void;
	site.server.faults.push({type: 'hold', until: new Promise<void>(resolve => {
		release = resolve;
	})});
	return release;
}

/** The next message the tabs hear on sendonce's channel. */
function nextAnnouncement(): Promise<unknown> {
	const listener = new BroadcastChannel('sendonce');
	onTestFinished(() => {
		listener.close();
	});
	return new Promise(resolve => {
		listener.onmessage = event => resolve(event.data);
	});
}

/** A token refresh in `headers()` that waits until `fail()`, then throws. */
function failingTokenRefresh() {
	let fail!: () => void;
	const failed = new Promise<void>(resolve => {
		fail = resolve;
	});
	let started!: () => void;
	const running = new Promise<void>(resolve => {
		started = resolve;
	});
	return {
		running,
		fail,
		async headers(): Promise<Record<string, string>> {
			started();
			await failed;
			throw new Error('token refresh failed');
		},
	};
}

test('a 401 to the held copy\'s first attempt here, after another tab\'s lost reply, is refused, not failed: the key stays', async () => {
	const store = shared();
	const held = await createClient({...fast, store}).intent('checkout', order('stale-1'));
	await sentElsewhere(store);

	site.server.faults.push({type: 'error-before', status: 401});
	expect(await held.send()).toMatchObject({status: 'unresolved', reason: 'refused', attempts: 3, mayHaveBeenSent: true});
	expect(await store.get('intent:checkout')).toMatchObject({key: held.key, attempts: 3});

	// Signed in again, the user presses the same order: the same key, the stored answer.
	expect(await createClient({...fast, store}).send('checkout', order('stale-1'))).toMatchObject({status: 'succeeded', key: held.key, replayed: true});
	expect(new Set(site.server.keys)).toEqual(new Set([held.key]));
	expect(site.server.effects.get('stale-1')).toBe(1);
});

test('resume() in the page holding the older copy rolls back, when headers() throws, to what the store held', async () => {
	const store = shared();
	let failing = false;
	const page = createClient({...fast, store, headers() {
		if (failing) throw new Error('token refresh failed');
		return {};
	}});
	const held = await page.intent('checkout', order('stale-2'));
	await leftMidSend(store);

	failing = true;
	await expect(page.resume()).rejects.toThrow('token refresh failed');
	// Nothing left: the store keeps the interrupted record as it was, for a later resume(); the
	// page stops showing it as sending (issue 31, item 2).
	expect(await store.get('intent:checkout')).toMatchObject({key: held.key, state: 'sending', attempts: 1});
	expect(held).toMatchObject({state: 'unresolved', attempts: 1, mayHaveBeenSent: true});

	// Past the window, the same press finds an intent that may have been sent: no new key.
	vi.useFakeTimers({toFake: ['Date']});
	vi.setSystemTime(Date.now() + 25 * 3_600_000);
	expect(await createClient({...fast, store}).send('checkout', order('stale-2'))).toMatchObject({status: 'expired', key: held.key, mayHaveBeenSent: true});
	expect(site.server.keys).toEqual([]);
});

test('client.fetch aborted before a byte left does not delete what another tab sent once it let go', async () => {
	const base = shared();
	// This tab's next deletion waits until the other tab has sent the intent.
	let deleting!: () => void;
	const reached = new Promise<void>(resolve => {
		deleting = resolve;
	});
	let sent!: () => void;
	const othersDone = new Promise<void>(resolve => {
		sent = resolve;
	});
	const store: IntentStore = {...base, async update(id, updater) {
		const old = await base.get(id);
		if (old !== undefined && updater(old) === undefined) {
			deleting();
			await othersDone;
		}

		return base.update!(id, updater);
	}};
	const controller = new AbortController();
	const page = createClient({...fast, store, retry: {...fast.retry, limit: 1}, headers() {
		// The component unmounts while the token is fetched.
		controller.abort();
		return {};
	}});
	const fetched = createFetch(page)(`${site.server.url}/orders`, {method: 'POST', body: JSON.stringify({order: 'stale-3'}), headers: {'content-type': 'application/json'}, intent: 'checkout', signal: controller.signal})
		.catch((error: unknown) => error);
	await reached;

	site.server.faults.push({type: 'lose-reply'});
	const [resumed] = await createClient({...fast, store: base, retry: {...fast.retry, limit: 1}}).resume();
	expect(resumed).toMatchObject({status: 'unresolved', attempts: 1});
	sent();

	expect(await fetched).toBeInstanceOf(OutcomeUnknownError);
	expect(await base.get('intent:checkout')).toMatchObject({key: resumed!.key, attempts: 1});
	expect(site.server.effects.get('stale-3')).toBe(1);
});

/** Web Locks as a browser has them: one holder per name, the others wait or, with ifAvailable, get null. */
function webLocks() {
	const held = new Map<string, Array<() => void>>();
	return {
		async request(name: string, options: {ifAvailable?: boolean}, callback: (lock: unknown) => unknown) {
			const queue = held.get(name);
			if (queue && options.ifAvailable) return callback(null);
			if (queue) {
				await new Promise<void>(resolve => {
					queue.push(resolve);
				});
			} else {
				held.set(name, []);
			}

			try {
				return await callback({name});
			} finally {
				const next = held.get(name)!.shift();
				if (next) next();
				else held.delete(name);
			}
		},
	};
}

test('past its window, an intent another tab delivered and deleted is not reported as never sent', async () => {
	vi.stubGlobal('navigator', {locks: webLocks(), onLine: true});
	onTestFinished(() => {
		vi.unstubAllGlobals();
	});
	const store = shared();
	const held = await createClient({...fast, store}).intent('checkout', order('stale-4'));
	expect(await (await createClient({...fast, store}).get('checkout'))!.send()).toMatchObject({status: 'succeeded'});
	await vi.waitFor(async () => {
		expect(await store.get('intent:checkout')).toBeUndefined();
	});
	vi.useFakeTimers({toFake: ['Date']});
	vi.setSystemTime(Date.now() + 25 * 3_600_000);

	// The outcome the other tab announced, not "expired, never sent".
	expect(await held.send()).toMatchObject({status: 'succeeded', key: held.key});
	expect(site.server.effects.get('stale-4')).toBe(1);
});

test('a send() aborted before it could claim leaves the sending tab\'s record as it is', async () => {
	const store = shared();
	const release = holdNextWork();
	const sending = createClient({...fast, store}).send('checkout', order('stale-5'));
	await vi.waitFor(() => {
		expect(site.server.inFlight).toBe(1);
	});
	const owners = await store.get('intent:checkout');
	expect(owners).toMatchObject({state: 'sending', attempts: 1, lease: expect.anything()});

	const seen = await createClient({...fast, store}).get('checkout');
	expect(await seen!.send({signal: AbortSignal.abort()})).toMatchObject({status: 'unresolved', reason: 'aborted'});
	expect(await store.get('intent:checkout')).toEqual(owners);

	release();
	expect(await sending).toMatchObject({status: 'succeeded'});
	expect(site.server.effects.get('stale-5')).toBe(1);
});

test('a press in the page still showing an intent the service worker delivered joins the delivery: no new key', async () => {
	const store = shared();
	const page = createClient({...fast, store});
	const held = await page.intent('checkout', order('stale-6'));
	// The worker sent it while the tab was hidden, and left its note for the pages: succeeded.
	const stored = await store.get('intent:checkout') as Record<string, unknown>;
	await store.set('intent:checkout', {...stored, state: 'succeeded', attempts: 1, updatedAt: Date.now()});

	expect(await page.send('checkout', order('stale-6'))).toMatchObject({status: 'succeeded', key: held.key});
	expect(site.server.requests).toEqual([]);
	expect(await store.get('intent:checkout')).toBeUndefined();
});

/** The worker delivered `held` (one effect under its key) and left its note: succeeded. */
async function deliveredByWorker(store: IntentStore, held: {key: string}, id: string): Promise<void> {
	await fetch(`${site.server.url}/orders`, {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': held.key}, body: JSON.stringify({order: id})});
	const stored = await store.get('intent:checkout') as Record<string, unknown>;
	await store.set('intent:checkout', {...stored, state: 'succeeded', attempts: 1, updatedAt: Date.now()});
}

test('the page\'s own resume() takes up the worker\'s note: the intent it shows ends succeeded, with a result', async () => {
	const store = shared();
	const page = createClient({...fast, store});
	const held = await page.intent('checkout', order('stale-7'));
	await deliveredByWorker(store, held, 'stale-7');

	// The tab becomes visible again.
	expect(await page.resume()).toEqual([expect.objectContaining({status: 'succeeded', key: held.key, replayed: true})]);
	expect(held).toMatchObject({state: 'succeeded', result: {status: 'succeeded'}});
	expect(await held.send()).toMatchObject({status: 'succeeded', key: held.key});
	expect(await store.get('intent:checkout')).toBeUndefined();
	expect(new Set(site.server.keys)).toEqual(new Set([held.key]));
	expect(site.server.effects.get('stale-7')).toBe(1);
});

test('another tab shows the worker\'s note first: the page still showing the intent hears it, and its press joins the delivery', async () => {
	const store = shared();
	const page = createClient({...fast, store});
	const held = await page.intent('checkout', order('stale-8'));
	await deliveredByWorker(store, held, 'stale-8');

	// Another tab of the site lists its outbox: it shows the note once, deletes it, and tells the tabs.
	const told = nextAnnouncement();
	expect(await createClient({...fast, store}).list()).toEqual([expect.objectContaining({key: held.key, state: 'succeeded'})]);
	expect(await told).toMatchObject({type: 'outcome', key: held.key, result: {status: 'succeeded'}});
	await new Promise<void>(resolve => setImmediate(resolve));
	expect(await store.get('intent:checkout')).toBeUndefined();
	expect(held.state).toBe('pending'); // the page has not looked yet

	expect(await page.send('checkout', order('stale-8'))).toMatchObject({status: 'succeeded', key: held.key});
	expect(new Set(site.server.keys)).toEqual(new Set([held.key]));
	expect(site.server.effects.get('stale-8')).toBe(1);
});

test('a rollback that finds another tab\'s attempt on record leaves that tab\'s record, and its lease, alone', async () => {
	const store = shared();
	const held = await createClient({...fast, store}).intent('checkout', order('stale-9'));
	await leftMidSend(store);

	// This page resumes it; its token refresh is slow, then fails.
	const token = failingTokenRefresh();
	const page = createClient({...fast, store, timeout: 60_000, headers: token.headers});
	const resumed = page.resume().catch((error: unknown) => error);
	await token.running;
	expect(await store.get('intent:checkout')).toMatchObject({attempts: 2, lease: expect.anything()});

	// The laptop slept past this page's lease: another tab takes the intent over and sends it.
	vi.useFakeTimers({toFake: ['Date']});
	vi.setSystemTime(Date.now() + 11_000);
	const release = holdNextWork();
	const other = (await createClient({...fast, store}).get('checkout'))!.send();
	await vi.waitFor(() => {
		expect(site.server.inFlight).toBe(1);
	});
	const others = await store.get('intent:checkout');
	expect(others).toMatchObject({key: held.key, state: 'sending', attempts: 3, lease: expect.anything()});

	token.fail();
	expect(await resumed).toMatchObject({message: 'token refresh failed'});
	expect(await store.get('intent:checkout')).toEqual(others);
	release();
	expect(await other).toMatchObject({status: 'succeeded'});
	expect(site.server.effects.get('stale-9')).toBe(1);
});

test('a press after another tab\'s order that this page only listed is a new order, not joined to that one', async () => {
	const store = shared();
	const page = createClient({...fast, store});
	await page.list();
	const release = holdNextWork();
	const told = nextAnnouncement();
	const theirs = createClient({...fast, store}).send('checkout', order('stale-10'));
	await vi.waitFor(() => {
		expect(site.server.inFlight).toBe(1);
	});
	// The page's outbox shows the other tab's order being sent.
	expect((await page.list()).map(intent => intent.state)).toEqual(['sending']);
	release();
	const first = await theirs;
	expect(await told).toMatchObject({key: first.key, result: {status: 'succeeded'}});
	await vi.waitFor(async () => {
		expect(await store.get('intent:checkout')).toBeUndefined();
	});

	// Later, this page's user orders the same again: a new order, a new key.
	const second = await page.send('checkout', order('stale-10'));
	expect(second).toMatchObject({status: 'succeeded'});
	expect(second.key).not.toBe(first.key);
	expect(site.server.effects.get('stale-10')).toBe(2);
});

test('a press joining a delivery it heard of takes the outcome at once: no attempt, no headers()', async () => {
	// With Web Locks, as in a browser: the lock is free, so nothing but the outcome heard stops a send.
	vi.stubGlobal('navigator', {locks: webLocks(), onLine: true});
	onTestFinished(() => {
		vi.unstubAllGlobals();
	});
	const store = shared();
	let session = true;
	const page = createClient({...fast, store, headers() {
		if (!session) throw new Error('session expired');
		return {};
	}});
	const held = await page.intent('checkout', order('stale-11'));
	await deliveredByWorker(store, held, 'stale-11');
	const told = nextAnnouncement();
	expect(await createClient({...fast, store}).list()).toEqual([expect.objectContaining({key: held.key, state: 'succeeded'})]);
	await told;
	await new Promise<void>(resolve => setImmediate(resolve));

	session = false;
	expect(await page.send('checkout', order('stale-11'))).toMatchObject({status: 'succeeded', key: held.key});
	expect(site.server.requests).toHaveLength(1); // the worker's
});

test('a resume() whose rollback finds another tab sending no longer shows this page\'s copy as sending', async () => {
	const store = shared();
	const held = await createClient({...fast, store}).intent('checkout', order('stale-12'));
	await leftMidSend(store);
	const token = failingTokenRefresh();
	const page = createClient({...fast, store, timeout: 60_000, headers: token.headers});
	const mine = (await page.get('checkout'))!;
	const resumed = page.resume().catch((error: unknown) => error);
	await token.running;
	vi.useFakeTimers({toFake: ['Date']});
	vi.setSystemTime(Date.now() + 11_000);
	const release = holdNextWork();
	const other = (await createClient({...fast, store}).get('checkout'))!.send();
	await vi.waitFor(() => {
		expect(site.server.inFlight).toBe(1);
	});

	token.fail();
	expect(await resumed).toMatchObject({message: 'token refresh failed'});
	expect(mine).toMatchObject({key: held.key, state: 'unresolved'});
	release();
	expect(await other).toMatchObject({status: 'succeeded'});
});

test('resume() at start-up leaves a worker\'s note for get() to show: the page opened later still learns it was sent', async () => {
	const store = shared();
	const held = await createClient({...fast, store}).intent('checkout', order('stale-13'));
	await deliveredByWorker(store, held, 'stale-13');

	const later = createClient({...fast, store});
	expect(await later.resume()).toEqual([]);
	expect(await store.get('intent:checkout')).toMatchObject({key: held.key, state: 'succeeded'});
	expect(await later.get('checkout')).toMatchObject({key: held.key, state: 'succeeded'});
	expect(site.server.effects.get('stale-13')).toBe(1);
});
