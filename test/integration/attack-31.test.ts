import {IDBFactory} from 'fake-indexeddb';
import {afterEach, expect, test, vi} from 'vitest';
import {createClient, indexedDbStore, type IntentStore} from '../../src/index.js';

/*
 * What an outside attack of issue 31's core found (scripts f1, f4, f7, f8): a page that stopped
 * sending still showed its intent as being sent, or a tab's send() rejected with the state
 * machine's own error. Each test fails without its fix.
 */

const URL = 'https://api.example.com/orders';
const FAST = {retry: {limit: 2, baseDelay: 1, maxDelay: 5, budget: false as const}, timeout: 5000};
const key = (init?: RequestInit) => new Headers(init?.headers).get('idempotency-key')!;
const answer = (status: number) => new Response(JSON.stringify({status}), {status, headers: {'content-type': 'application/json'}});

afterEach(() => {
	vi.unstubAllGlobals();
});

test('a send stopped while it waits for the network, after an attempt, is unresolved in the page and in the store, and resume() does not send it (f8)', async () => {
	vi.stubGlobal('indexedDB', new IDBFactory());
	const sent: string[] = [];
	const client = createClient({
		...FAST,
		store: indexedDbStore(),
		isOnline: () => false,
		async fetch(_input: RequestInfo | URL, init?: RequestInit) {
			sent.push(key(init));
			throw new TypeError('Failed to fetch');
		},
	});
	const intent = await client.intent('checkout', {url: URL, json: {order: 1}});
	const stop = new AbortController();
	const sending = intent.send({signal: stop.signal});
	// Offline, the first attempt waits a second for the network (never less), then is made anyway.
	await vi.waitFor(() => {
		expect([sent.length, intent.state]).toEqual([1, 'pending']);
	}, {timeout: 5000});
	stop.abort();

	expect(await sending).toMatchObject({status: 'unresolved', reason: 'aborted', mayHaveBeenSent: true});
	expect(intent.snapshot).toMatchObject({state: 'unresolved', attempts: 1});
	expect((await indexedDbStore().list()).map(([, record]) => (record as {state: string}).state)).toEqual(['unresolved']);
	expect(await client.resume()).toEqual([]);
	expect(sent).toHaveLength(1);
});

test('a page whose caller stopped waiting for another tab\'s send never shows it sending after send() resolved (f4)', async () => {
	vi.stubGlobal('indexedDB', new IDBFactory());
	let reply!: () => void;
	const replied = new Promise<void>(resolve => {
		reply = resolve;
	});
	const sent: string[] = [];
	const a = createClient({...FAST, store: indexedDbStore(), async fetch(_input: RequestInfo | URL, init?: RequestInit) {
		sent.push(key(init));
		await replied;
		return answer(201);
	}});
	const c = createClient({...FAST, store: indexedDbStore(), async fetch(_input: RequestInfo | URL, init?: RequestInit) {
		sent.push(key(init));
		return answer(201);
	}});
	const request = {url: URL, json: {order: 1}};
	const sendingA = (await a.intent('checkout', request)).send();
	await vi.waitFor(() => {
		expect(sent).toHaveLength(1);
	});
	const shown = await c.intent('checkout', request);
	const stop = new AbortController();
	const waiting = shown.send({signal: stop.signal});
	stop.abort();

	expect(await waiting).toMatchObject({status: 'unresolved', reason: 'aborted'});
	expect(shown.snapshot.state).not.toBe('sending');
	reply();
	expect(await sendingA).toMatchObject({status: 'succeeded'});
	expect(sent).toHaveLength(1);
});

test('a failed mark another tab left (its delete failed) is an outcome to a page that shows the intent, not an error (f7)', async () => {
	const values = new Map<string, unknown>();
	const copy = (value: unknown) => (value === undefined ? undefined : structuredClone(value));
	const disk = () => Object.assign(new Error('disk I/O'), {name: 'UnknownError'});
	// One store two tabs share, whose deletes fail in the first.
	const storeFor = (deletesFail: boolean): IntentStore => ({
		shared: true,
		async get(id) {
			return copy(values.get(id));
		},
		async set(id, value) {
			values.set(id, copy(value));
		},
		async delete(id) {
			if (deletesFail) throw disk();
			values.delete(id);
		},
		async list() {
			return [...values].map(([id, value]) => [id, copy(value)]);
		},
		async update(id, updater) {
			const next = updater(copy(values.get(id)));
			if (next !== undefined) values.set(id, copy(next));
			else if (values.has(id)) {
				if (deletesFail) throw disk();
				values.delete(id);
			}
		},
	});
	const sent: string[] = [];
	const fetch = async (_input: RequestInfo | URL, init?: RequestInit) => {
		sent.push(key(init));
		return answer(401);
	};
	const a = createClient({...FAST, store: storeFor(true), fetch});
	const c = createClient({...FAST, store: storeFor(false), fetch});
	const request = {url: URL, json: {order: 1}};
	const intent = await a.intent('checkout', request);
	const shown = (await c.get('checkout'))!;
	expect(await intent.send()).toMatchObject({status: 'failed'});
	expect([...values.values()].map(record => (record as {state: string}).state)).toEqual(['failed']);

	const result = await shown.send();
	expect(['failed', 'unresolved']).toContain(result.status);
	expect(shown.snapshot.state).not.toBe('sending');
	expect(sent).toHaveLength(1);
});

test('a page that heard another tab\'s "may have been sent", then saw the store cleared, writes back what it heard: a 401 next is refused, never "failed" (f1)', async () => {
	vi.stubGlobal('indexedDB', new IDBFactory());
	// The server did the work under these keys; the script answers each attempt in turn.
	const worked: string[] = [];
	const script = ['work, reply lost', 503];
	const fallback = 401;
	const fetch = async (_input: RequestInfo | URL, init?: RequestInit) => {
		const step = script.shift() ?? fallback;
		if (step === 'work, reply lost') {
			worked.push(key(init));
			throw new TypeError('Failed to fetch');
		}

		return answer(step as number);
	};
	const [a, b, c] = [0, 1, 2].map(() => createClient({...FAST, store: indexedDbStore(), fetch}));
	const request = {url: URL, json: {order: 1}};
	const intent = await a!.intent('checkout', request);
	// Tab C shows the intent (its look-up) before tab A sends it.
	await c!.get('checkout');
	const heard = new Promise<void>(resolve => {
		const channel = new BroadcastChannel('sendonce');
		channel.addEventListener('message', () => {
			channel.close();
			resolve();
		});
	});
	expect(await intent.send()).toMatchObject({status: 'unresolved', mayHaveBeenSent: true});
	await heard;
	await b!.clear();

	const pressed = await c!.intent('checkout', request);
	expect(pressed.key).toBe(intent.key);
	const result = await pressed.send();
	expect(worked).toEqual([intent.key]);
	expect(result).toMatchObject({status: 'unresolved', reason: 'refused', mayHaveBeenSent: true});
});
