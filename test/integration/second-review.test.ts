import {afterEach, describe, expect, test, vi} from 'vitest';
import {createFetch} from '../../src/integrations/fetch.js';
import {createClient, InvalidRequestError, memoryStore, OutcomeUnknownError, type ClientOptions, type IntentStore} from '../../src/index.js';

/*
 * The holes a second hostile review found after the lean-core changes (client.send's single
 * write, deferred deletes, batched resume, client.fetch). Each test tells what the API saw
 * and what the store holds.
 */

afterEach(() => {
	vi.unstubAllGlobals();
});

const fast = {retry: {limit: 3, baseDelay: 1, maxDelay: 5, budget: false}, timeout: 5000} satisfies ClientOptions;
const url = 'https://api.test/pay';

/** A store tabs share, as IndexedDB is: leases are needed where Web Locks are missing. */
function sharedStore(): IntentStore {
	return {...memoryStore(), shared: true, durable: true};
}

/** Lets `count` turns of the event loop pass: other work runs, no time is waited for. */
async function turns(count = 50): Promise<void> {
	for (let index = 0; index < count; index++) await new Promise<void>(resolve => setImmediate(resolve));
}

/** An API per "tab": it records every call, and holds each answer until `answer()`. */
function heldApi() {
	const calls: Array<{tab: string; key: string | null; body: unknown}> = [];
	const held: Array<(response: Response) => void> = [];
	return {
		calls,
		fetchFor: (tab: string) => async (_input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
			calls.push({tab, key: new Headers(init?.headers).get('idempotency-key'), body: init?.body});
			return new Promise<Response>(resolve => held.push(resolve));
		},
		answer(status = 201) {
			for (const resolve of held.splice(0)) resolve(Response.json({ok: true}, {status}));
		},
		get waiting() {
			return held.length;
		},
	};
}

/** An API that answers at once, recording what it got. */
function quickApi(answer: (call: number) => Response = () => Response.json({ok: true}, {status: 201})) {
	const calls: Array<{key: string | null; body: unknown; init: RequestInit | undefined}> = [];
	return {
		calls,
		fetch: async (_input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
			calls.push({key: new Headers(init?.headers).get('idempotency-key'), body: init?.body, init});
			return answer(calls.length);
		},
	};
}

/** navigator.locks as a browser has it: exclusive, `ifAvailable`, `signal`, first come first served. */
function fakeLocks() {
	const held = new Set<string>();
	const queues = new Map<string, Array<() => void>>();
	return {
		held,
		async request(name: string, options: {ifAvailable?: boolean; signal?: AbortSignal}, callback: (lock: unknown) => unknown) {
			if (held.has(name)) {
				if (options.ifAvailable) return callback(null);
				await new Promise<void>((resolve, reject) => {
					const queue = queues.get(name) ?? [];
					queue.push(resolve);
					queues.set(name, queue);
					options.signal?.addEventListener('abort', () => {
						queue.splice(queue.indexOf(resolve), 1);
						reject(options.signal!.reason as Error);
					}, {once: true});
				});
			} else {
				held.add(name);
			}

			try {
				return await callback({name});
			} finally {
				const next = queues.get(name)?.shift();
				if (next) next();
				else held.delete(name);
			}
		},
	};
}

const states = async (store: IntentStore) => (await store.list()).map(([, value]) => {
	const {state, attempts} = value as {state: string; attempts: number};
	return `${state}/${attempts}`;
});

test.each([true, false])('a write-ahead the store refuses for its quota holds no lock on the fresh key (issue 31, 7; sending at once: %s)', async sending => {
	const locks = fakeLocks();
	vi.stubGlobal('navigator', {locks, onLine: true});
	const base = memoryStore();
	// The store runs the scope table's decision, then cannot commit: a full disk.
	const full: IntentStore = {...base, async update(id, updater) {
		updater(await base.get(id));
		throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
	}};
	const api = quickApi();
	const client = createClient({...fast, store: full, fetch: api.fetch});
	const pressed = sending ? client.send('order', {url, json: {total: 5}}) : client.intent('order', {url, json: {total: 5}});
	await expect(pressed).rejects.toMatchObject({name: 'StoreError', code: 'STORE_QUOTA'});
	expect([...locks.held]).toEqual([]);
	expect(api.calls).toEqual([]);
});

describe('resume()', () => {
	test('a headers() that throws sends nothing, leaves every intent as it was, holds no lock, and the next resume() sends each once', async () => {
		const locks = fakeLocks();
		vi.stubGlobal('navigator', {locks, onLine: true});
		const store = memoryStore();
		const before = createClient({...fast, store});
		for (let index = 0; index < 15; index++) await before.intent(`order-${index}`, {url, json: {index}});

		let signedIn = false;
		const api = quickApi();
		const tab = createClient({...fast, store, fetch: api.fetch, async headers() {
			if (!signedIn) throw new Error('no token yet');
			return {authorization: 'Bearer t'};
		}});
		await expect(tab.resume()).rejects.toThrow('no token yet');
		expect(api.calls).toEqual([]);
		expect(await states(store)).toEqual(Array.from({length: 15}, () => 'pending/0'));
		expect([...locks.held]).toEqual([]);

		signedIn = true;
		const results = await tab.resume();
		expect(results.map(result => result.status)).toEqual(Array.from({length: 15}, () => 'succeeded'));
		expect(new Set(api.calls.map(call => call.key)).size).toBe(15);
		expect(api.calls).toHaveLength(15);
	});
});

describe('one sender across tabs, where Web Locks are missing (leases)', () => {
	/** Two tabs on one shared store; tab A's client.send() is on the wire, its answer held. */
	async function tabAPaying() {
		const store = sharedStore();
		const api = heldApi();
		const tabA = createClient({...fast, store, fetch: api.fetchFor('A')});
		const tabB = createClient({...fast, store, fetch: api.fetchFor('B')});
		const paying = tabA.send('pay', {url, json: {amount: 5}});
		await vi.waitUntil(() => api.calls.length === 1);
		return {store, api, tabA, tabB, paying};
	}

	test('a resume() in the tab that is sending keeps that tab\'s lease: another tab sends nothing meanwhile', async () => {
		const {store, api, tabA, tabB, paying} = await tabAPaying();
		const resumedA = tabA.resume();
		await turns();
		expect((await store.get('intent:pay') as {lease?: unknown}).lease).toBeDefined();
		const resumedB = tabB.resume();
		await turns();
		expect(api.calls.map(call => call.tab)).toEqual(['A']);
		api.answer();
		expect((await paying).status).toBe('succeeded');
		await Promise.all([resumedA, resumedB]);
		expect(api.calls.map(call => call.tab)).toEqual(['A']);
	});

	test('Web Locks that refuse (a sandboxed frame): client.send() puts its lease on record, and another tab sends nothing meanwhile', async () => {
		vi.stubGlobal('navigator', {onLine: true, locks: {async request() {
			throw Object.assign(new Error('The request was denied.'), {name: 'SecurityError'});
		}}});
		const {store, api, tabB, paying} = await tabAPaying();
		expect((await store.get('intent:pay') as {lease?: unknown}).lease).toBeDefined();
		const resumedB = tabB.resume();
		await turns();
		expect(api.calls.map(call => call.tab)).toEqual(['A']);
		api.answer();
		expect((await paying).status).toBe('succeeded');
		await resumedB;
		expect(api.calls.map(call => call.tab)).toEqual(['A']);
	});
});

test('a press in another tab just after a success with the same body is a new action: sent with a new key', async () => {
	const store = sharedStore();
	const api = quickApi();
	const tabA = createClient({...fast, store, fetch: api.fetch});
	const tabB = createClient({...fast, store, fetch: api.fetch});
	const first = await tabA.send('add-to-cart', {url, json: {sku: 'A1'}});
	// Tab A's record is deleted a moment later, with its next write; tab B sees it meanwhile.
	expect(await store.get('intent:add-to-cart')).toBeDefined();
	const second = await tabB.send('add-to-cart', {url, json: {sku: 'A1'}});
	expect([first.status, second.status]).toEqual(['succeeded', 'succeeded']);
	expect(api.calls.map(call => call.key)).toEqual([first.key, second.key]);
	expect(second.key).not.toBe(first.key);
}, 15_000); // Tab B waits out a poll and the owner's grace (1.5 s) before it sends.

describe('a failed intent whose record cannot be deleted', () => {
	const refusing = () => quickApi(() => Response.json({error: 'insufficient funds'}, {status: 400}));

	/** A memory store whose chosen operations fail while `failing.on` holds, as an aborted IndexedDB transaction does. */
	function breakable(operations: Array<'update' | 'updateMany'>, failing: {on: boolean}): IntentStore {
		const base = memoryStore();
		const store: IntentStore = {...base};
		for (const name of operations) {
			const operation = base[name]! as (...args: unknown[]) => Promise<void>;
			store[name] = (async (...args: unknown[]) => {
				if (failing.on) throw Object.assign(new Error('The transaction was aborted.'), {name: 'UnknownError'});
				return operation(...args);
			}) as never;
		}

		return store;
	}

	test('is marked failed instead: the app hears "failed", and no later page sends it', async () => {
		const failing = {on: true};
		const store = breakable(['updateMany'], failing);
		const api = refusing();
		const events: string[] = [];
		const result = await createClient({...fast, store, fetch: api.fetch, onEvent: event => events.push(event.type)}).send('pay', {url, json: {amount: 5}});
		expect(result.status).toBe('failed');
		expect(events).toContain('store-error');
		expect(await states(store)).toEqual(['failed/1']);
		failing.on = false;
		expect(await createClient({...fast, store, fetch: api.fetch}).resume()).toEqual([]);
		expect(api.calls).toHaveLength(1);
		expect(await store.list()).toEqual([]);
	});

	test('where no write works at all: "could not confirm" (unresolved, refused), and a later page sends the same key, never a new one', async () => {
		const failing = {on: false};
		const store = breakable(['update', 'updateMany'], failing);
		let call = 0;
		const api = quickApi(() => {
			call++;
			failing.on = call === 1;
			return call === 1 ? Response.json({error: 'insufficient funds'}, {status: 400}) : Response.json({paid: true}, {status: 201});
		});
		const result = await createClient({...fast, store, fetch: api.fetch}).send('pay', {url, json: {amount: 5}});
		expect(result).toMatchObject({status: 'unresolved', reason: 'refused', mayHaveBeenSent: true, response: {status: 400}});
		failing.on = false;
		await createClient({...fast, store, fetch: api.fetch}).resume();
		expect(api.calls.map(call => call.key)).toEqual([result.key, result.key]);
	});
});

describe('an abort before anything left, on the one-call paths', () => {
	test('client.send(): nothing sent, the intent stays pending with no attempt, and a corrected body replaces it', async () => {
		const store = memoryStore();
		const api = quickApi();
		const client = createClient({...fast, store, fetch: api.fetch});
		const aborted = await client.send('pay', {url, json: {amount: 5}}, {signal: AbortSignal.abort()});
		expect(aborted).toMatchObject({status: 'unresolved', reason: 'aborted', attempts: 0, mayHaveBeenSent: false});
		expect(await states(store)).toEqual(['pending/0']);
		const corrected = await client.send('pay', {url, json: {amount: 6}});
		expect(corrected.status).toBe('succeeded');
		expect(api.calls.map(call => call.body)).toEqual(['{"amount":6}']);
	});

	test('createFetch(client)(): rejects with the abort, as fetch does, and leaves nothing to resume', async () => {
		const store = memoryStore();
		const api = quickApi();
		const client = createClient({...fast, store, fetch: api.fetch});
		const error = await createFetch(client)(url, {method: 'POST', body: '{"a":1}', signal: AbortSignal.abort()}).catch((error: unknown) => error);
		expect(error).not.toBeInstanceOf(OutcomeUnknownError);
		expect((error as Error).name).toBe('AbortError');
		expect(await store.list()).toEqual([]);
		expect(await client.resume()).toEqual([]);
		expect(api.calls).toEqual([]);
	});
});

test('createFetch(client)() aborted before anything left keeps a stored intent it only joined', async () => {
	const store = memoryStore();
	const api = quickApi();
	const client = createClient({...fast, store, fetch: api.fetch});
	const stored = await client.intent('pay', {url, method: 'POST', body: '{"a":1}'});
	const error = await createFetch(client)(url, {method: 'POST', body: '{"a":1}', intent: 'pay', signal: AbortSignal.abort()}).catch((error: unknown) => error);
	expect((error as Error).name).toBe('AbortError');
	expect(api.calls).toEqual([]);
	expect(await store.get('intent:pay')).toMatchObject({key: stored.key, state: 'pending', attempts: 0});
});

describe('createFetch(client)() and what an intent cannot store', () => {
	test.each([
		['credentials', {credentials: 'include'}],
		['redirect', {redirect: 'error'}],
		['mode', {mode: 'no-cors'}],
		['keepalive', {keepalive: true}],
		['cache', {cache: 'no-store'}],
	] as const)('refuses %s rather than drop it on a retry after a reload: nothing sent, nothing stored', async (name, init) => {
		const store = memoryStore();
		const api = quickApi();
		const client = createClient({...fast, store, fetch: api.fetch});
		const error = await createFetch(client)(url, {method: 'POST', body: '{}', ...init}).catch((error: unknown) => error);
		expect(error).toBeInstanceOf(InvalidRequestError);
		expect((error as Error).message).toContain(`\`${name}:`);
		expect(api.calls).toEqual([]);
		expect(await store.list()).toEqual([]);
	});

	test('takes the defaults fetch would use, from init or from a Request', async () => {
		const api = quickApi();
		const client = createClient({...fast, store: 'memory', fetch: api.fetch});
		await createFetch(client)(url, {method: 'POST', body: '{}', credentials: 'same-origin', redirect: 'follow', mode: 'cors'});
		await createFetch(client)(new Request(url, {method: 'POST', body: '{}'}));
		expect(api.calls).toHaveLength(2);
	});

	test('refuses a Request body that is not UTF-8 text, and sends one that is byte for byte', async () => {
		const api = quickApi();
		const client = createClient({...fast, store: 'memory', fetch: api.fetch});
		const binary = new Request(url, {method: 'POST', body: new Uint8Array([0xFF, 0xFE, 0x00, 0x80])});
		await expect(createFetch(client)(binary)).rejects.toBeInstanceOf(InvalidRequestError);
		const text = new Request(`${url}/text`, {method: 'POST', body: new TextEncoder().encode('née ✓')});
		await createFetch(client)(text);
		expect(api.calls.map(call => call.body)).toEqual(['née ✓']);
	});
});
