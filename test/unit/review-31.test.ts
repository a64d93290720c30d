import {HttpResponse} from 'msw';
import {afterEach, beforeEach, describe, expect, onTestFinished, test, vi} from 'vitest';
import {createClient, OutcomeUnknownError, UnresolvedIntentError, type IntentResult} from '../../src/index.js';
import {createFetch} from '../../src/integrations/fetch.js';
import {drive, eventLog, FAST, flush, networkError, status, testStore, until, URL_ORDERS, useMsw} from './helpers.js';

/*
 * The outside review of issue 31, items 1, 2, 3, 4 and 7: each test asserts what the docs promise.
 * Two clients on one store are two tabs; their outcomes cross in Node's BroadcastChannel. A
 * `shared` store makes them coordinate with leases (Node 20 has no Web Locks): a tab that finds
 * another sending waits for it.
 */

const {api} = useMsw();

beforeEach(() => {
	vi.useFakeTimers();
});
afterEach(() => {
	vi.useRealTimers();
});

const ORDER = {url: URL_ORDERS, json: {order: 'o-1'}} as const;
const created = () => HttpResponse.json({id: 'msg_1'}, {status: 201});
/**
 * Two tabs on a store they share, as IndexedDB is. Tab A's reads are counted: without Web Locks
 * a tab waiting for another reads the store every 500 ms, so `aWaits()` moves time until tab A
 * has looked three more times (its press, its claim, a poll): it is then waiting for tab B.
 */
function sharedTabs() {
	const store = Object.assign(testStore(), {shared: true});
	let reads = 0;
	const tabA = createClient({...FAST, store: {...store, async get(id) {
		reads++;
		return store.get(id);
	}}});
	const tabB = createClient({...FAST, store});
	const aWaits = async () => {
		const from = reads;
		await drive(until(() => reads >= from + 3, 'tab A waiting for tab B'));
	};

	return {store, tabA, tabB, aWaits};
}

/** A reply the test gives later. */
function held() {
	let answer!: (response: Response) => void;
	const reply = async () => new Promise<Response>(resolve => {
		answer = resolve;
	});
	return {reply, answer: (response: Response) => answer(response)};
}

test('1. a press after another tab clears keeps the key, and writes the record again', async () => {
	const store = testStore();
	const tabA = createClient({...FAST, store});
	const tabB = createClient({...FAST, store});
	// The first attempt reaches the server and its reply is lost; every retry meets a 503.
	const seen = api(networkError, status(503), status(503), status(503), status(503), created());
	const first = await tabA.intent('checkout', ORDER);
	expect(await drive(first.send())).toMatchObject({status: 'unresolved', reason: 'exhausted', mayHaveBeenSent: true});

	await tabB.clear();
	const again = await tabA.intent('checkout', ORDER);

	expect(again.key).toBe(first.key);
	expect(store.record('checkout')?.key).toBe(first.key);
	expect(await drive(again.send())).toMatchObject({status: 'succeeded', key: first.key});
	expect(new Set(seen.map(request => request.key))).toEqual(new Set([first.key]));
});

test('2. an interrupted order survives a start-up resume() whose headers() throws; a pending one stays pending', async () => {
	const store = testStore();
	const before = createClient({...FAST, store});
	const order = await before.intent('checkout', ORDER);
	const contact = await before.intent('contact', {url: URL_ORDERS, json: {message: 'hi'}});
	// The tab closed while the order was on the wire.
	await store.set('intent:checkout', {...store.record('checkout')!, state: 'sending', attempts: 1});

	let signedIn = false;
	const seen = api(created());
	const reloaded = createClient({...FAST, store, headers() {
		if (!signedIn) throw new Error('no token yet');
		return {authorization: 'Bearer t'};
	}});
	await expect(drive(reloaded.resume())).rejects.toThrow('no token yet');

	expect(seen).toEqual([]);
	expect(store.record('checkout')).toMatchObject({key: order.key, state: 'sending', attempts: 1});
	expect(store.record('contact')).toMatchObject({key: contact.key, state: 'pending', attempts: 0});

	signedIn = true;
	const results = await drive(reloaded.resume());
	expect(results.map(result => [result.key, result.status]).sort()).toEqual([[order.key, 'succeeded'], [contact.key, 'succeeded']].sort());
	expect(seen.map(request => request.key).sort()).toEqual([order.key, contact.key].sort());
});

test('3. a tab waiting for another tab\'s send, when site data is cleared, never shows sending with an unresolved result', async () => {
	const {store, tabA, tabB, aWaits} = sharedTabs();
	const bReply = held();
	const seen = api(bReply.reply, created());
	const sendingB = tabB.send('checkout', ORDER);
	await until(() => seen.length === 1, 'tab B\'s request');

	const intentA = await tabA.intent('checkout', ORDER);
	expect(intentA.key).toBe(seen[0]!.key);
	const sendingA = intentA.send();
	await aWaits();
	expect(seen).toHaveLength(1);

	store.map.clear(); // "Clear site data"
	bReply.answer(status(503));
	await drive(Promise.all([sendingA, sendingB]));

	const {state, result} = intentA.snapshot;
	expect(result).toBeDefined();
	expect({state, result: result?.status}).toEqual({state: result?.status, result: result?.status});
});

test('4. createFetch: a retry that waits for another tab\'s success resolves with that tab\'s answer, not its own old error body', async () => {
	const {tabA, tabB, aWaits} = sharedTabs();
	const down = () => HttpResponse.json({error: 'down'}, {status: 503});
	const bReply = held();
	const seen = api(down, down, down, down, down, bReply.reply);
	const fetchA = createFetch(tabA);
	const call = () => fetchA(URL_ORDERS, {method: 'POST', headers: {'content-type': 'application/json'}, body: '{"order":"o-1"}', intent: 'checkout'});

	await expect(drive(call())).rejects.toBeInstanceOf(OutcomeUnknownError);
	expect(seen).toHaveLength(5);

	// Tab B retries the stored intent; while its request is on the wire, A's user retries the call.
	const sendingB = (await tabB.get('checkout'))!.send();
	await until(() => seen.length === 6, 'tab B\'s request');
	const retried = call();
	await aWaits();
	bReply.answer(created());
	const [response] = await drive(Promise.all([retried, sendingB]));

	expect(seen).toHaveLength(6);
	expect(new Set(seen.map(request => request.key)).size).toBe(1);
	expect(response.status).toBe(201);
	expect(await response.text()).toBe('{"id":"msg_1"}');
});

test('4. createFetch: another tab\'s answer that is a JSON string comes back as JSON', async () => {
	const {tabA, tabB, aWaits} = sharedTabs();
	const bReply = held();
	const seen = api(status(503), status(503), status(503), status(503), status(503), bReply.reply);
	const fetchA = createFetch(tabA);
	const call = () => fetchA(URL_ORDERS, {method: 'POST', headers: {'content-type': 'application/json'}, body: '{"order":"o-1"}', intent: 'checkout'});
	await expect(drive(call())).rejects.toBeInstanceOf(OutcomeUnknownError);

	const sendingB = (await tabB.get('checkout'))!.send();
	await until(() => seen.length === 6, 'tab B\'s request');
	const retried = call();
	await aWaits();
	bReply.answer(new HttpResponse('"ok"', {status: 201, headers: {'content-type': 'application/json'}}));
	const [response] = await drive(Promise.all([retried, sendingB]));

	expect(await response.json()).toBe('ok');
});

test('7. offline throughout: the intent waits for the network, pending, without using up retry.limit, then is sent with its key', async () => {
	let online = false;
	const seen = api(() => (online ? created() : HttpResponse.error()));
	const store = testStore();
	const client = createClient({...FAST, store, isOnline: () => online});
	const intent = await client.intent('checkout', ORDER);
	let result: IntentResult | undefined;
	const sending = intent.send().then(settled => (result = settled));

	// Ten times retry.limit × retry.maxDelay, every fetch failing at once.
	for (let elapsed = 0; elapsed < 10 * FAST.retry.limit * FAST.retry.maxDelay; elapsed += 50) {
		await vi.advanceTimersByTimeAsync(50);
		await flush();
	}

	expect(result?.status).not.toBe('unresolved');
	expect(intent.state).not.toBe('unresolved');
	expect(store.record('checkout')?.state).toBe('pending');

	online = true;
	await drive(client.resume());
	expect(await drive(sending)).toMatchObject({status: 'succeeded', key: intent.key});
	expect(new Set(seen.map(request => request.key))).toEqual(new Set([intent.key]));
});

describe('found by attacking the fixes', () => {
	test('1. after another tab clears, an edited body in the page showing a may-have-been-sent intent is refused with UnresolvedIntentError', async () => {
		const store = testStore();
		const tabA = createClient({...FAST, store});
		const tabB = createClient({...FAST, store});
		api(networkError, status(503));
		const first = await tabA.intent('checkout', ORDER);
		expect(await drive(first.send())).toMatchObject({status: 'unresolved', mayHaveBeenSent: true});
		await tabB.clear();

		const edited = tabA.intent('checkout', {url: URL_ORDERS, json: {order: 'o-2'}});
		await expect(edited).rejects.toBeInstanceOf(UnresolvedIntentError);
		await expect(edited).rejects.toMatchObject({previous: {key: first.key}});
	});

	test('7. client.send() offline, then online: every attempt written ahead, one key, succeeded, the record deleted', async () => {
		let online = false;
		const seen = api(() => (online ? created() : HttpResponse.error()));
		const store = testStore();
		const log = eventLog();
		const client = createClient({...FAST, store, isOnline: () => online, onEvent: log.onEvent});
		const sending = client.send('checkout', ORDER);
		await drive(until(() => seen.length === 1, 'the offline attempt'));
		await until(() => store.record('checkout')?.state === 'pending', 'the intent waiting for the network');
		expect(store.record('checkout')).toMatchObject({state: 'pending', attempts: 1});

		online = true;
		expect(await drive(sending)).toMatchObject({status: 'succeeded', attempts: 2});
		expect(log.of('attempt').map(event => event.attempt)).toEqual([1, 2]);
		expect(new Set(seen.map(request => request.key)).size).toBe(1);
		expect(store.record('checkout')).toBeUndefined();
	});

	test('7. isOnline wrongly false while the server does the work: the attempt stays counted, and an edited body cannot replace it', async () => {
		const seen = api(() => HttpResponse.error());
		const store = testStore();
		const client = createClient({...FAST, store, isOnline: () => false});
		const first = await client.intent('checkout', ORDER);
		const abort = new AbortController();
		const sending = first.send({signal: abort.signal});
		await drive(until(() => seen.length === 1, 'the attempt'));
		await until(() => first.state === 'pending', 'the intent waiting for the network');

		expect(first).toMatchObject({attempts: 1, mayHaveBeenSent: true});
		await expect(client.intent('checkout', {url: URL_ORDERS, json: {order: 'o-2'}})).rejects.toBeInstanceOf(UnresolvedIntentError);
		abort.abort();
		await drive(sending);
	});

	test('7. offline with retry.maxDelay 0: attempts are paced at one a second, not a storm', async () => {
		const seen = api(() => HttpResponse.error());
		const client = createClient({...FAST, retry: {...FAST.retry, baseDelay: 0, maxDelay: 0}, store: testStore(), isOnline: () => false});
		const abort = new AbortController();
		const sending = client.send('checkout', ORDER, {signal: abort.signal});
		await drive(until(() => seen.length === 1, 'the first attempt'));
		for (let second = 0; second < 10; second++) await drive(vi.advanceTimersByTimeAsync(1000));
		expect(seen.length).toBeGreaterThanOrEqual(10);
		expect(seen.length).toBeLessThanOrEqual(13);
		abort.abort();
		await drive(sending);
	});
});

describe('found by attacking the decision function', () => {
	test('an error after an offline wait (headers() throws once back online) leaves the page showing unresolved, the store pending for resume()', async () => {
		let online = false;
		let failHeaders = false;
		const seen = api(() => (online ? created() : HttpResponse.error()));
		const store = testStore();
		const client = createClient({...FAST, store, isOnline: () => online, headers() {
			if (!failHeaders) return {};
			failHeaders = false;
			throw new Error('no token yet');
		}});
		const intent = await client.intent('checkout', ORDER);
		const sending = intent.send();
		sending.catch(() => undefined);
		await drive(until(() => seen.length === 1, 'the offline attempt'));
		await until(() => intent.state === 'pending', 'the intent waiting for the network');
		failHeaders = true;
		online = true;
		await expect(drive(sending)).rejects.toThrow('no token yet');

		expect(intent.snapshot).toMatchObject({state: 'unresolved', attempts: 1, mayHaveBeenSent: true});
		expect(store.record('checkout')).toMatchObject({state: 'pending', attempts: 1});
		expect(await drive(client.resume())).toMatchObject([{status: 'succeeded', key: intent.key}]);
		expect(new Set(seen.map(request => request.key))).toEqual(new Set([intent.key]));
	});

	test('resume()\'s attempt on record, the window ending before it leaves and the store failing then: the page shows expired, not sending', async () => {
		api(() => created());
		const base = testStore();
		const earlier = createClient({...FAST, store: base, window: 60_000});
		await earlier.intent('checkout', ORDER);
		const record = base.record('checkout')!;
		base.map.set('intent:checkout', {...record, state: 'sending', attempts: 1});
		let failing = false;
		const store = {...base, async set(id: string, value: unknown) {
			if (failing) throw Object.assign(new Error('The transaction was aborted.'), {name: 'UnknownError'});
			await base.set(id, value);
			if ((value as {attempts?: number}).attempts === 2) {
				// The store step took a while: the window ends meanwhile, and the store starts failing.
				vi.setSystemTime(record.expiresAt + 1);
				failing = true;
			}
		}};
		const client = createClient({...FAST, store, window: 60_000});
		const intent = (await client.get('checkout'))!;
		await drive(client.resume());

		expect(intent.snapshot.state).toBe('expired');
	});
});

test('found by the model: a never-sent intent whose record vanished (another tab\'s first attempt refused) is not sent again under its spent key', async () => {
	// No BroadcastChannel (Firefox with cookies blocked): tab A cannot hear tab B's outcome.
	vi.stubGlobal('BroadcastChannel', undefined);
	onTestFinished(() => {
		vi.unstubAllGlobals();
	});
	const seen = api(status(401), created());
	const store = testStore();
	let failHeaders = true;
	const tabA = createClient({...FAST, store, headers() {
		if (!failHeaders) return {};
		failHeaders = false;
		throw new Error('no token yet');
	}});
	const tabB = createClient({...FAST, store});
	await expect(drive(tabA.send('checkout', ORDER))).rejects.toThrow('no token yet');
	const [refused] = await drive(tabB.resume());
	expect(refused).toMatchObject({status: 'failed'});

	const again = await drive(tabA.send('checkout', ORDER));
	expect(again).toMatchObject({status: 'succeeded'});
	expect(again.key).not.toBe(refused!.key);
	expect(seen.map(request => request.key)).toEqual([refused!.key, again.key]);
});
