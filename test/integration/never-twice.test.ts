import fc from 'fast-check';
import {afterAll, afterEach, beforeAll, describe, expect, test, vi} from 'vitest';
import {createClient, memoryStore, StoreError, UnresolvedIntentError, type ClientOptions, type IntentResult, type IntentStore} from '../../src/index.js';
import {startContractServer, type ContractServer} from '../server/contract-server.js';

/*
 * The holes an outside review found (issue 10), each against a real local server that honours
 * the contract and counts the work it does.
 */

let server: ContractServer;
beforeAll(async () => {
	server = await startContractServer({
		serve(request, response) {
			// A login wall in front of the API, as an expired session meets it.
			if (request.url === '/walled' && request.method === 'POST') {
				response.writeHead(302, {location: '/login'});
				response.end();
				return true;
			}

			if (request.url === '/login') {
				response.writeHead(200, {'content-type': 'text/html'});
				response.end('<form>Sign in</form>');
				return true;
			}

			return false;
		},
	});
});
afterAll(async () => server.close());
afterEach(() => {
	server.reset();
	vi.useRealTimers();
});

const fast = {store: 'memory', retry: {limit: 5, baseDelay: 1, maxDelay: 5, budget: false}, timeout: 2000} satisfies ClientOptions;
const orders = () => `${server.url}/orders`;

/** Lets `count` turns of the event loop pass: other work runs, no time is waited for. */
async function turns(count: number): Promise<void> {
	for (let index = 0; index < count; index++) await new Promise<void>(resolve => setImmediate(resolve));
}

/** A store whose operations can be held: `hold()` makes the next matching call wait for `release()`. */
function gatedStore(base: IntentStore = memoryStore()) {
	let gate: {id: string; skip: number; reached: () => void; released: Promise<void>; commitFirst: boolean} | undefined;
	const wait = async (id: string, commit: () => Promise<void>) => {
		const current = gate;
		if (current?.id !== id || current.skip-- > 0) {
			await commit();
			return;
		}

		gate = undefined;
		if (current.commitFirst) await commit();
		current.reached();
		await current.released;
		if (!current.commitFirst) await commit();
	};

	const store: IntentStore = {
		...base,
		async update(id, updater) {
			await wait(id, async () => base.update!(id, updater));
		},
		async updateMany(updates) {
			for (const [id, updater] of updates) await store.update!(id, updater);
		},
	};
	return {
		store,
		/**
		 * Holds the next `update` of `id`. With `commitFirst`, the change is made at once and only
		 * its acknowledgement waits (an IndexedDB transaction that has committed but whose
		 * `complete` event has not run yet). `skip` lets that many updates of `id` pass first.
		 */
		hold(id: string, {commitFirst = false, skip = 0} = {}) {
			let release!: () => void;
			let reached!: () => void;
			const released = new Promise<void>(resolve => {
				release = resolve;
			});
			const isReached = new Promise<void>(resolve => {
				reached = resolve;
			});
			gate = {id, skip, reached, released, commitFirst};
			return {release, reached: isReached};
		},
	};
}

describe('a refusal after a possible delivery never retires the key (1)', () => {
	test.each([401, 403, 404])('the reply is lost, then %i: unresolved "refused", the key kept, and the retry after re-login is the one effect', async status => {
		const store = memoryStore();
		let token = 'old';
		const client = createClient({...fast, store, headers: () => ({authorization: `Bearer ${token}`})});
		server.faults.push({type: 'lose-reply'}, {type: 'error-before', status});
		const intent = await client.intent('checkout', {url: orders(), json: {order: `r-${status}`}});
		const result = await intent.send();

		expect(result).toMatchObject({status: 'unresolved', reason: 'refused', response: {status}, data: {error: 'unavailable'}, mayHaveBeenSent: true, attempts: 2});
		expect(intent.state).toBe('unresolved');
		expect(await store.get('intent:checkout')).toMatchObject({key: intent.key, state: 'unresolved', reason: 'refused'});
		expect(server.effects.get(`r-${status}`)).toBe(1);

		token = 'fresh';
		const again = await client.intent('checkout', {url: orders(), json: {order: `r-${status}`}});
		expect(again.key).toBe(intent.key);
		expect(await again.send()).toMatchObject({status: 'succeeded', replayed: true});
		expect(server.effects.get(`r-${status}`)).toBe(1);
		expect(new Set(server.keys)).toEqual(new Set([intent.key]));
	});

	test('attempts made before a reload count: the new page\'s first answer, a 401, is refused too', async () => {
		const store = memoryStore();
		const before = createClient({...fast, store, retry: 1});
		server.faults.push({type: 'lose-reply'});
		const intent = await before.intent('checkout', {url: orders(), json: {order: 'r-reload'}});
		expect(await intent.send()).toMatchObject({status: 'unresolved', reason: 'exhausted'});

		const after = createClient({...fast, store});
		server.faults.push({type: 'error-before', status: 401});
		const same = await after.intent('checkout', {url: orders(), json: {order: 'r-reload'}});
		expect(same.key).toBe(intent.key);
		expect(await same.send()).toMatchObject({status: 'unresolved', reason: 'refused', response: {status: 401}});
		expect(await store.get('intent:checkout')).toMatchObject({key: intent.key, state: 'unresolved'});
	});

	test('a 4xx the server marks as its stored answer (Idempotent-Replayed) settles as failed', async () => {
		const store = memoryStore();
		const client = createClient({...fast, store});
		server.faults.push({type: 'lose-reply'});
		const intent = await client.intent('checkout', {url: orders(), json: {order: 'r-stored', reject: 'sold out'}});

		expect(await intent.send()).toMatchObject({status: 'failed', response: {status: 400, headers: {'idempotent-replayed': 'true'}}, data: {reason: 'sold out'}});
		expect(await store.get('intent:checkout')).toBeUndefined();
	});
});

describe('the scope table is decided in the store, with the write (3, 14)', () => {
	test('a different body while the first write-ahead is committing: UnresolvedIntentError, and the first attempt goes out once', async () => {
		const gated = gatedStore();
		const client = createClient({...fast, store: gated.store});
		const first = await client.intent('contact', {url: orders(), json: {order: 'race-1'}});
		const writeAhead = gated.hold('intent:contact', {commitFirst: true});
		// The first attempt is held at the server until the second press has decided, so that it
		// decides while the first is sending however loaded the machine (else the first may have
		// succeeded by then, and a different body after a success is rightly a new intent).
		let decided!: () => void;
		server.faults.push({type: 'hold', until: new Promise<void>(resolve => {
			decided = resolve;
		})});
		const sending = first.send();
		await writeAhead.reached;

		const second = client.intent('contact', {url: orders(), json: {order: 'race-2'}});
		// Let the second press decide (it hashes its body first) while the first write-ahead's
		// acknowledgement is still held; a client that decides from memory decides now.
		await Promise.race([second.catch(() => undefined), turns(200)]);
		writeAhead.release();
		await expect(second).rejects.toBeInstanceOf(UnresolvedIntentError);
		decided();
		expect(await sending).toMatchObject({status: 'succeeded', key: first.key});
		expect(server.keys).toEqual([first.key]);
		expect(server.totalEffects).toBe(1);
	});

	test('a different body before the first write-ahead: replaced, and the first intent sends nothing', async () => {
		let headersAsked!: () => void;
		let giveHeaders!: (headers: Record<string, string>) => void;
		const asked = new Promise<void>(resolve => {
			headersAsked = resolve;
		});
		const client = createClient({...fast, headers: async () => {
			headersAsked();
			return new Promise(resolve => {
				giveHeaders = resolve;
			});
		}});
		const first = await client.intent('contact', {url: orders(), json: {order: 'early-1'}});
		const sending = first.send();
		await asked;

		const replacement = await client.intent('contact', {url: orders(), json: {order: 'early-2'}});
		giveHeaders({});
		expect(replacement.key).not.toBe(first.key);
		expect(await sending).toMatchObject({status: 'unresolved', reason: 'aborted', mayHaveBeenSent: false});
		expect(server.keys).toEqual([]);
	});

	test('whatever the timing, a body refused or replaced never reaches the server beside the other', async () => {
		let run = 0;
		await fc.assert(fc.asyncProperty(
			fc.integer({min: 0, max: 6}),
			fc.array(fc.integer({min: 0, max: 3}), {minLength: 8, maxLength: 8}),
			async (turnsBeforeSecond, delays) => {
				run++;
				server.reset();
				const base = memoryStore();
				let call = 0;
				// Every store operation is acknowledged after a random number of event-loop turns.
				const slow: IntentStore = {
					...base,
					async update(id, updater) {
						await base.update!(id, updater);
						await turns(delays[call++ % delays.length]!);
					},
				};
				const client = createClient({...fast, store: slow});
				const first = await client.intent('contact', {url: orders(), json: {order: `p-${run}-1`}});
				const sending = first.send();
				await turns(turnsBeforeSecond);
				const second = await client.intent('contact', {url: orders(), json: {order: `p-${run}-2`}}).catch((error: unknown) => error);
				// Settled before the second press: a new action, legitimately.
				const settledFirst = first.state === 'succeeded';
				const firstResult = await sending;
				if (second instanceof UnresolvedIntentError) {
					expect(firstResult.status).toBe('succeeded');
					expect(server.keys).toEqual([first.key]);
				} else if (!settledFirst) {
					expect(firstResult).toMatchObject({status: 'unresolved', mayHaveBeenSent: false});
					expect(server.keys).toEqual([]);
				}
			},
		), {numRuns: 40});
	});

	test('a body after a success is a new intent, even while the settled record is still being deleted', async () => {
		const gated = gatedStore();
		const client = createClient({...fast, store: gated.store});
		const first = await client.intent('contact', {url: orders(), json: {order: 'done-1'}});
		// The write-ahead passes; the next update is the delete of the settled record.
		const deletion = gated.hold('intent:contact', {skip: 1});
		const sending = first.send();
		await deletion.reached;
		expect(first.state).toBe('succeeded');

		const second = client.intent('contact', {url: orders(), json: {order: 'done-2'}});
		await Promise.race([second.catch(() => undefined), turns(200)]);
		deletion.release();
		expect((await second).key).not.toBe(first.key);
		expect(await sending).toMatchObject({status: 'succeeded'});
	});
});

describe('answers that are not the API\'s (4, 5)', () => {
	test('an opaque answer (a no-cors fetch) is unresolved "transport" and never retried', async () => {
		const store = memoryStore();
		let calls = 0;
		const noCors = async (input: RequestInfo | URL, init?: RequestInit) => {
			calls++;
			await fetch(input, init);
			const opaque = new Response(null, {status: 200});
			Object.defineProperties(opaque, {type: {value: 'opaque'}, status: {value: 0}});
			return opaque;
		};

		const client = createClient({...fast, store, fetch: noCors});
		const intent = await client.intent('checkout', {url: orders(), json: {order: 'opaque-1'}});
		const result = await intent.send();

		expect(result).toMatchObject({status: 'unresolved', reason: 'transport', mayHaveBeenSent: true, error: {name: 'UnreadableResponseError', message: expect.stringMatching(/no-cors/)}});
		expect(calls).toBe(1);
		expect(server.effects.get('opaque-1')).toBe(1);
		expect(await store.get('intent:checkout')).toMatchObject({state: 'unresolved', reason: 'transport'});
	});

	test('a POST redirected to a login page is unresolved "redirected", kept, and not retried', async () => {
		const store = memoryStore();
		const client = createClient({...fast, store});
		const intent = await client.intent('checkout', {url: `${server.url}/walled`, json: {order: 'wall-1'}});
		const result = await intent.send();

		expect(result).toMatchObject({status: 'unresolved', reason: 'redirected', response: {status: 200, redirected: true, url: `${server.url}/login`}, data: '<form>Sign in</form>'});
		expect(await store.get('intent:checkout')).toMatchObject({key: intent.key, state: 'unresolved', reason: 'redirected'});
	});

	test('classify sees the redirect and may settle it', async () => {
		const client = createClient({...fast, classify: response => (response.redirected && response.url?.endsWith('/login') ? 'fail' : undefined)});
		const intent = await client.intent('checkout', {url: `${server.url}/walled`, json: {order: 'wall-2'}});

		expect(await intent.send()).toMatchObject({status: 'failed', response: {redirected: true}});
	});
});

describe('stores that misbehave (7, 9, 13)', () => {
	test('a record written by a newer version is never set aside, overwritten or sent', async () => {
		const store = memoryStore();
		const newer = {v: 2, key: 'from-the-future', scope: 'checkout', state: 'sending', shape: 'unknown to us'};
		await store.set('intent:checkout', newer);
		const client = createClient({...fast, store});

		await expect(client.intent('checkout', {url: orders(), json: {order: 'v-1'}})).rejects.toMatchObject({name: 'StoreError', code: 'STORE_VERSION', message: expect.stringMatching(/reload/)});
		expect(await client.list()).toEqual([]);
		expect(await client.resume()).toEqual([]);
		expect(await store.list()).toEqual([['intent:checkout', newer]]);
		expect(server.requests).toEqual([]);
	});

	test('an invalid record that cannot be set aside (store full): intent() rejects with StoreError, bounded', async () => {
		const base = memoryStore();
		await base.set('intent:checkout', {v: 1, garbage: true});
		const full = async () => {
			throw Object.assign(new Error('The quota has been exceeded.'), {name: 'QuotaExceededError'});
		};
		const client = createClient({...fast, store: {...base, set: full}});

		await expect(client.intent('checkout', {url: orders(), json: {order: 'full-1'}})).rejects.toMatchObject({name: 'StoreError', code: 'STORE_QUOTA'});
		expect(await base.get('intent:checkout')).toEqual({v: 1, garbage: true});
	}, 5000);

	test('a write-ahead that fails on attempt 2: send() rejects, the intent is unresolved (not sending), and a retry works', async () => {
		const base = memoryStore();
		let failNext = false;
		const store: IntentStore = {
			...base,
			async update(id, updater) {
				if (failNext) {
					failNext = false;
					throw Object.assign(new Error('disk full'), {name: 'QuotaExceededError'});
				}

				return base.update!(id, updater);
			},
		};
		const client = createClient({...fast, store, onEvent(event) {
			if (event.type === 'retry') failNext = true;
		}});
		server.faults.push({type: 'error-after', status: 502});
		const intent = await client.intent('checkout', {url: orders(), json: {order: 'wa-2'}});

		await expect(intent.send()).rejects.toBeInstanceOf(StoreError);
		expect(intent.state).toBe('unresolved');
		expect(intent.snapshot).toMatchObject({state: 'unresolved', attempts: 1, mayHaveBeenSent: true});
		expect(await intent.send()).toMatchObject({status: 'succeeded', replayed: true, attempts: 2});
		expect(server.effects.get('wa-2')).toBe(1);
	});
});

describe('nothing hangs (10, 15)', () => {
	/** A transport that never answers and ignores its signal. */
	const deaf = () => {
		const calls: string[] = [];
		return {calls, fetch: async (input: RequestInfo | URL) => {
			calls.push(String(input instanceof Request ? input.url : input));
			return new Promise<Response>(() => undefined);
		}};
	};

	test('abort() ends a send whose transport ignores the signal, and the claim is released', async () => {
		const store = {...memoryStore(), shared: true};
		const transport = deaf();
		const client = createClient({...fast, store, fetch: transport.fetch, timeout: 60_000});
		const intent = await client.intent('checkout', {url: orders(), json: {order: 'deaf-1'}});
		const controller = new AbortController();
		const sending = intent.send({signal: controller.signal});
		await vi.waitFor(() => {
			expect(transport.calls).toHaveLength(1);
		});
		controller.abort();

		expect(await sending).toMatchObject({status: 'unresolved', reason: 'aborted', attempts: 1});
		expect(await store.get('intent:checkout')).not.toHaveProperty('lease');
	});

	test('the timeout ends an attempt whose transport ignores the signal', async () => {
		const transport = deaf();
		const client = createClient({...fast, fetch: transport.fetch, timeout: 20, retry: {limit: 2, baseDelay: 1, maxDelay: 1, budget: false}});
		const intent = await client.intent('checkout', {url: orders(), json: {order: 'deaf-2'}});

		expect(await intent.send()).toMatchObject({status: 'unresolved', reason: 'exhausted', attempts: 2, error: {name: 'TimeoutError'}});
	});

	test('discard() ends a send whose transport ignores the signal', async () => {
		const transport = deaf();
		const client = createClient({...fast, fetch: transport.fetch, timeout: 60_000});
		const intent = await client.intent('checkout', {url: orders(), json: {order: 'deaf-3'}});
		const sending = intent.send();
		await vi.waitFor(() => {
			expect(transport.calls).toHaveLength(1);
		});
		await intent.discard();

		expect(await sending).toMatchObject({status: 'unresolved', reason: 'aborted'});
	});

	test('a headers() that never settles: the timeout rejects the send, nothing is sent, and the intent stays pending', async () => {
		const client = createClient({...fast, timeout: 20, headers: async () => new Promise<Record<string, string>>(() => undefined)});
		const intent = await client.intent('checkout', {url: orders(), json: {order: 'hdr-1'}});

		await expect(intent.send()).rejects.toMatchObject({name: 'TimeoutError', message: expect.stringMatching(/headers/)});
		expect(intent.state).toBe('pending');
		expect(server.requests).toEqual([]);
	});

	test('a headers() that never settles: abort() ends the send at once', async () => {
		const client = createClient({...fast, timeout: 60_000, headers: async () => new Promise<Record<string, string>>(() => undefined)});
		const intent = await client.intent('checkout', {url: orders(), json: {order: 'hdr-2'}});
		const controller = new AbortController();
		const sending = intent.send({signal: controller.signal});
		setTimeout(() => controller.abort(), 10);

		expect(await sending).toMatchObject({status: 'unresolved', reason: 'aborted', attempts: 0, mayHaveBeenSent: false});
		expect(intent.state).toBe('pending');
	});

	test('a joining caller\'s abort ends only its own wait; the send goes on for the other', async () => {
		const client = createClient(fast);
		server.faults.push({type: 'slow', ms: 150});
		const intent = await client.intent('checkout', {url: orders(), json: {order: 'join-1'}});
		const first = new AbortController();
		const second = new AbortController();
		const a = intent.send({signal: first.signal});
		const b = intent.send({signal: second.signal});
		await vi.waitFor(() => {
			expect(server.inFlight).toBe(1);
		});
		first.abort();

		expect(await a).toMatchObject({status: 'unresolved', reason: 'aborted', mayHaveBeenSent: true});
		expect(await b).toMatchObject({status: 'succeeded', attempts: 1});
		expect(server.requests).toHaveLength(1);
	});

	test('a joining caller\'s signal is heard: it ends its wait', async () => {
		const client = createClient(fast);
		server.faults.push({type: 'slow', ms: 150});
		const intent = await client.intent('checkout', {url: orders(), json: {order: 'join-2'}});
		const a = intent.send();
		const controller = new AbortController();
		const b = intent.send({signal: controller.signal});
		controller.abort();

		expect(await b).toMatchObject({status: 'unresolved', reason: 'aborted'});
		expect(await a).toMatchObject({status: 'succeeded'});
	});

	test('when every caller has aborted, the send stops and the intent is stored unresolved', async () => {
		const store = memoryStore();
		const client = createClient({...fast, store});
		server.faults.push({type: 'slow', ms: 300});
		const intent = await client.intent('checkout', {url: orders(), json: {order: 'join-3'}});
		const first = new AbortController();
		const second = new AbortController();
		const results = [intent.send({signal: first.signal}), intent.send({signal: second.signal})];
		await vi.waitFor(() => {
			expect(server.inFlight).toBe(1);
		});
		first.abort();
		second.abort();

		const settled: IntentResult[] = await Promise.all(results);
		expect(settled.map(result => result.status === 'unresolved' && result.reason)).toEqual(['aborted', 'aborted']);
		expect(await store.get('intent:checkout')).toMatchObject({state: 'unresolved', reason: 'aborted'});
		expect(server.requests).toHaveLength(1);
	});
});

describe('send() always sends when the state allows (12)', () => {
	test('a send() that joins a resume() which finds nothing to resume still sends', async () => {
		const store = memoryStore();
		const tab = createClient({...fast, store, retry: 1});
		const otherTab = createClient({...fast, store});
		const intent = await tab.intent('checkout', {url: orders(), json: {order: 'join-resume'}});
		const [stale] = await otherTab.list();
		server.faults.push({type: 'error-before', status: 503});
		expect(await intent.send()).toMatchObject({status: 'unresolved', reason: 'exhausted'});

		// The other tab still holds it as pending: its resume() finds it unresolved and stops.
		const resuming = stale!.resume();
		const sending = stale!.send();
		expect(await resuming).toBeUndefined();
		expect(await sending).toMatchObject({status: 'succeeded', key: intent.key});
		expect(server.keys).toEqual([intent.key, intent.key]);
	});
});

describe('clocks that lie (11)', () => {
	test('a lease that reaches further than one lease period (the clock was set back) does not hold', async () => {
		const store = {...memoryStore(), shared: true};
		const client = createClient({...fast, store});
		const intent = await client.intent('checkout', {url: orders(), json: {order: 'lease-1'}});
		const stored = await store.get('intent:checkout') as Record<string, unknown>;
		// A crashed tab's lease, written before the clock went back an hour.
		await store.set('intent:checkout', {...stored, lease: {owner: 'crashed-tab', until: Date.now() + 3_600_000}});

		expect(await intent.send()).toMatchObject({status: 'succeeded'});
		expect(server.keys).toEqual([intent.key]);
	}, 5000);

	test('an intent created more than 5 minutes in the future (a fast clock) is expired, never sent automatically', async () => {
		const store = memoryStore();
		const writer = createClient({...fast, store});
		vi.useFakeTimers({toFake: ['Date']});
		vi.setSystemTime(Date.now() + 10 * 60_000);
		const intent = await writer.intent('checkout', {url: orders(), json: {order: 'skew-1'}});
		vi.useRealTimers();

		const reader = createClient({...fast, store});
		expect(await reader.resume()).toEqual([expect.objectContaining({status: 'expired', key: intent.key})]);
		expect(server.requests).toEqual([]);
		expect(await store.get('intent:checkout')).toMatchObject({state: 'expired'});
	});
});

describe('an intent held from before, sent meanwhile by another tab', () => {
	test('past its window, send() expires it as possibly sent: the same press later joins it, never a second key', async () => {
		const store = {...memoryStore(), shared: true};
		const held = await createClient({...fast, store}).intent('checkout', {url: orders(), json: {order: 'held-1'}});
		// Another tab sends it; the work is done, the reply lost, its retries run out.
		server.faults.push({type: 'lose-reply'}, {type: 'error-before', status: 503});
		const other = createClient({...fast, store, retry: {...fast.retry, limit: 2}});
		expect(await (await other.get('checkout'))!.send()).toMatchObject({status: 'unresolved', attempts: 2});
		vi.useFakeTimers({toFake: ['Date']});
		vi.setSystemTime(Date.now() + 25 * 3_600_000);

		// The first page still holds the intent as it was: pending, never attempted.
		expect(held.attempts).toBe(0);
		expect(await held.send()).toMatchObject({status: 'expired', attempts: 2, mayHaveBeenSent: true});
		expect(await store.get('intent:checkout')).toMatchObject({key: held.key, state: 'expired', attempts: 2});

		// The user presses again with the same order: not a new action with a new key.
		const again = await createClient({...fast, store}).send('checkout', {url: orders(), json: {order: 'held-1'}});
		expect(again).toMatchObject({status: 'expired', key: held.key, mayHaveBeenSent: true});
		expect(new Set(server.keys)).toEqual(new Set([held.key]));
		expect(server.effects.get('held-1')).toBe(1);
	});
});
