import {IDBFactory} from 'fake-indexeddb';
import {afterEach, expect, test, vi} from 'vitest';
import {createClient, indexedDbStore} from '../../src/index.js';

/*
 * What the model-based test (model.test.ts) found once a service worker and IndexedDB took part
 * (issue 31), each reduced to the few steps that make it: a page wrote back, and sent, a record
 * that had vanished from a copy it had only read, never sent. Only a page that sent the intent
 * itself (or heard its outcome) may write it back: the record may be gone because another sender
 * settled it unheard.
 */

afterEach(() => {
	vi.useRealTimers();
	vi.unstubAllGlobals();
});

test('a stale lease: the tab that took over never writes back a record the owner deleted as failed, nor sends its key (seed 19685790)', async () => {
	vi.stubGlobal('indexedDB', new IDBFactory());
	vi.useFakeTimers({toFake: ['Date'], now: Date.now()});
	const sent: Array<[string, string]> = [];
	let answerA!: () => void;
	const gateA = new Promise<void>(resolve => {
		answerA = resolve;
	});
	let headersB!: () => void;
	const gateB = new Promise<void>(resolve => {
		headersB = resolve;
	});
	let bWaiting = false;
	const a = createClient({
		store: indexedDbStore(),
		async fetch(_input: RequestInfo | URL, init?: RequestInit) {
			sent.push(['A', new Headers(init?.headers).get('idempotency-key')!]);
			await gateA;
			return new Response('{"reason":"signed out"}', {status: 401, headers: {'content-type': 'application/json'}});
		},
	});
	const b = createClient({
		store: indexedDbStore(),
		async headers() {
			bWaiting = true;
			await gateB;
			return {};
		},
		async fetch(_input: RequestInfo | URL, init?: RequestInit) {
			sent.push(['B', new Headers(init?.headers).get('idempotency-key')!]);
			return new Response('{"ok":true}', {status: 201, headers: {'content-type': 'application/json'}});
		},
	});
	const request = {url: 'https://api.example.com/orders', json: {order: 1}};
	const intentA = await a.intent('order', request);
	const intentB = await b.intent('order', request);
	expect(intentB.key).toBe(intentA.key);

	const resultA = intentA.send();
	await vi.waitFor(() => {
		expect(sent).toHaveLength(1);
	});
	// A's lease goes stale (a clock jump; a tab whose timers are throttled): B takes the claim over.
	vi.setSystemTime(Date.now() + 11_000);
	const resultB = intentB.send();
	await vi.waitFor(() => {
		expect(bWaiting).toBe(true);
	});
	// A's attempt is refused: failed, its record deleted.
	answerA();
	expect(await resultA).toMatchObject({status: 'failed'});
	headersB();
	const outcomeB = await resultB;

	expect(outcomeB.status).not.toBe('succeeded');
	// A told its user "failed: nothing happened"; B then sent the same key and the server did the work.
	expect(sent.filter(([who]) => who === 'B')).toEqual([]);
});

test('an intent replaced as never sent while its page waited to be online is never written back nor sent (seed 926274081)', async () => {
	vi.stubGlobal('indexedDB', new IDBFactory());
	const sent: string[] = [];
	const fetch = async (_input: RequestInfo | URL, init?: RequestInit) => {
		sent.push(new Headers(init?.headers).get('idempotency-key')!);
		return new Response('{"ok":true}', {status: 201, headers: {'content-type': 'application/json'}});
	};
	let online = false;
	const events: string[] = [];
	const one = createClient({store: indexedDbStore(), fetch, isOnline: () => online, onEvent: event => events.push(event.type)});
	const zero = createClient({store: indexedDbStore(), fetch});
	const first = await one.intent('order', {url: 'https://api.example.com/orders', json: {body: 'x'}});
	
	const waiting = first.send();
	await vi.waitFor(() => {
		expect(events).toContain('wait-online');
	});
	// Another tab presses another body in the scope: the first, never sent, is replaced; the second succeeds and its record goes.
	const second = await zero.intent('order', {url: 'https://api.example.com/orders', json: {body: 'y'}});
	expect(second.key).not.toBe(first.key);
	expect(await second.send()).toMatchObject({status: 'succeeded'});
	await vi.waitFor(async () => {
		expect(await indexedDbStore().list()).toEqual([]);
	});
	online = true;
	const result = await waiting;
	expect(result.status).toBe('unresolved');
	expect(sent).not.toContain(first.key);
});
