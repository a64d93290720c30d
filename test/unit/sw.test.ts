import {IDBFactory} from 'fake-indexeddb';
import {afterEach, beforeEach, describe, expect, test, vi} from 'vitest';
import {createClient, indexedDbStore} from '../../src/index.js';
import type {IntentRecord} from '../../src/core/record.js';
import {installSendOnce} from '../../src/sw.js';
import {keepDelivered} from '../../src/sw/delivered.js';
import {messages} from '../../src/core/messages.js';

const record = (scope: string, key: string): IntentRecord => ({
	v: 1,
	key,
	scope,
	state: 'sending',
	request: {url: 'https://api.example.com/contact', method: 'POST', headers: {'content-type': 'application/json'}, body: '{"message":"hi"}'},
	fingerprint: 'a'.repeat(64),
	attempts: 2,
	createdAt: Date.now(),
	expiresAt: Date.now() + 60_000,
	updatedAt: Date.now(),
	lease: {owner: 'worker', until: Date.now() + 10_000},
});

beforeEach(() => {
	vi.stubGlobal('indexedDB', new IDBFactory());
});
afterEach(() => {
	vi.unstubAllGlobals();
});

describe('the service worker\'s store', () => {
	test('deleting an intent it delivered leaves a note for the pages: the record, succeeded, without its lease', async () => {
		const raw = indexedDbStore();
		const sending = record('contact', 'k-1');
		await raw.set('intent:contact', sending);
		const {store, delivered, written} = keepDelivered(raw);
		delivered('k-1', 'contact');

		await store.updateMany!([['intent:contact', () => undefined]]);
		await written();

		const {lease: _, ...rest} = sending;
		expect(await raw.get('intent:contact')).toEqual({...rest, state: 'succeeded', updatedAt: expect.any(Number) as number});
	});

	test('deleting any other intent deletes it', async () => {
		const raw = indexedDbStore();
		await raw.set('intent:contact', record('contact', 'k-1'));
		const {store, delivered} = keepDelivered(raw);
		delivered('k-2', 'other');

		await store.update!('intent:contact', () => undefined);

		expect(await raw.list()).toEqual([]);
	});

	test('the worker never sees a note, and never deletes one', async () => {
		const raw = indexedDbStore();
		await raw.set('intent:contact', {...record('contact', 'k-1'), state: 'succeeded'});
		await raw.set('intent:other', record('other', 'k-2'));
		const {store} = keepDelivered(raw);

		expect(await store.get('intent:contact')).toBeUndefined();
		expect((await store.list()).map(([id]) => id)).toEqual(['intent:other']);
		const given: unknown[] = [];
		await store.update!('intent:contact', old => {
			given.push(old);
			return undefined;
		});

		expect(given).toEqual([undefined]);
		expect(await raw.get('intent:contact')).toMatchObject({key: 'k-1', state: 'succeeded'});
	});
});

describe('a page that finds the worker\'s note', () => {
	test('shows the intent as succeeded once, then forgets it', async () => {
		const raw = indexedDbStore();
		await raw.set('intent:contact', {...record('contact', 'k-1'), state: 'succeeded'});

		const intent = await createClient({store: indexedDbStore()}).get('contact');

		expect(intent?.snapshot).toMatchObject({key: 'k-1', state: 'succeeded', attempts: 2, mayHaveBeenSent: true});
		expect(await raw.list()).toEqual([]);
		expect(await createClient({store: indexedDbStore()}).get('contact')).toBeUndefined();
	});
});

describe('installSendOnce', () => {
	/** A service worker scope that only keeps the types of the listeners added to it. */
	const fakeScope = () => {
		const types: string[] = [];
		const listeners = new Map<string, (event: Event) => void>();
		const scope = {
			addEventListener(type: string, listener: (event: Event) => void) {
				types.push(type);
				listeners.set(type, listener);
			},
			clients: {matchAll: async () => []},
		};
		return {types, scope, listeners};
	};

	test('listens for sync, activate and message, and for navigations only where Background Sync is missing', () => {
		const without = fakeScope();
		installSendOnce(without.scope);
		expect(without.types).toEqual(['sync', 'activate', 'message', 'fetch']);

		vi.stubGlobal('SyncManager', class {});
		const withSync = fakeScope();
		installSendOnce(withSync.scope);
		expect(withSync.types).toEqual(['sync', 'activate', 'message']);
	});

	test('refuses bad options at install, before any event', () => {
		const {scope, types} = fakeScope();
		expect(() => installSendOnce(scope, {navigationInterval: -1})).toThrow(new TypeError('Expected `navigationInterval` to be a number of milliseconds ≥ 0, got -1'));
		expect(() => installSendOnce(scope, {retry: {limit: 0}})).toThrow(TypeError);
		expect(types).toEqual([]);
	});

	test('sends on a navigation at most once per navigationInterval, and never on other requests', async () => {
		vi.useFakeTimers({toFake: ['Date']});
		try {
			const {scope, listeners} = fakeScope();
			installSendOnce(scope, {navigationInterval: 30_000});
			const kept: Array<Promise<unknown>> = [];
			const request = (mode: string) => Object.assign(new Event('fetch'), {request: {mode}, waitUntil: (promise: Promise<unknown>) => kept.push(promise)});
			const fetch = listeners.get('fetch')!;

			fetch(request('navigate'));
			fetch(request('cors'));
			vi.advanceTimersByTime(29_999);
			fetch(request('navigate'));
			expect(kept).toHaveLength(1);

			vi.advanceTimersByTime(1);
			fetch(request('navigate'));
			expect(kept).toHaveLength(2);
			await Promise.all(kept);
		} finally {
			vi.useRealTimers();
		}
	});
});

describe('every trigger covers every intent stored when it fires', () => {
	/** A stored intent never attempted, as a page leaves it when its tab crashes after `intent()`. */
	const stored = (scope: string, key: string): IntentRecord => {
		const {lease: _, ...rest} = record(scope, key);
		return {...rest, state: 'pending', attempts: 0};
	};

	/** Each stored record's state and attempts. */
	const notes = async (store: ReturnType<typeof indexedDbStore>) => Object.fromEntries((await store.list()).map(([id, value]) => [id, [(value as IntentRecord).state, (value as IntentRecord).attempts]]));

	/** A worker scope whose listeners are called by hand, and an API whose answers to some keys wait on a gate. */
	function setUp() {
		const listeners = new Map<string, (event: Event) => void>();
		const scope = {
			addEventListener(type: string, listener: (event: Event) => void) {
				listeners.set(type, listener);
			},
			clients: {matchAll: async () => []},
		};
		const seen: string[] = [];
		const gates = new Map<string, {open: () => void; shut: Promise<void>}>();
		const gate = (key: string) => {
			let open!: () => void;
			const shut = new Promise<void>(resolve => {
				open = resolve;
			});
			gates.set(key, {open, shut});
			return open;
		};

		const fetch = async (_input: RequestInfo | URL, init?: RequestInit) => {
			const key = new Headers(init?.headers).get('idempotency-key')!;
			seen.push(key);
			await gates.get(key)?.shut;
			return new Response('{"ok":true}', {status: 201, headers: {'content-type': 'application/json'}});
		};

		/** Fires `type` and resolves to what its `waitUntil` was given. */
		const fire = (type: string, extra: object = {}): Promise<unknown> => {
			let kept: Promise<unknown> | undefined;
			listeners.get(type)!(Object.assign(new Event(type), extra, {waitUntil: (promise: Promise<unknown>) => {
				kept = promise;
			}}));
			return kept!;
		};

		return {scope, seen, gate, fetch, fire};
	}

	test.each([
		['a sync', true, 'sync', {tag: 'sendonce'}],
		['a sendonce:send message, without Background Sync', false, 'message', {data: {type: 'sendonce:send'}}],
	] as const)('%s that fires while the worker sends an older intent sends the new one before its event ends', async (_name, sync, type, extra) => {
		if (sync) vi.stubGlobal('SyncManager', class {});
		const raw = indexedDbStore();
		await raw.set('intent:old', stored('old', 'k-old'));
		const {scope, seen, gate, fetch, fire} = setUp();
		const openOld = gate('k-old');
		installSendOnce(scope, {fetch});

		const activated = fire('activate');
		await vi.waitFor(() => {
			expect(seen).toEqual(['k-old']);
		});
		// The tab stores a new intent and crashes before sending it; the page had asked for a sync.
		await raw.set('intent:new', stored('new', 'k-new'));
		const triggered = fire(type, extra);
		openOld();
		await triggered;

		expect(seen).toEqual(['k-old', 'k-new']);
		await activated;
		// Each sent once, and left as a note for the pages.
		expect(await notes(raw)).toEqual({'intent:old': ['succeeded', 1], 'intent:new': ['succeeded', 1]});
	});

	test('an intent stored while the event\'s sends run is sent before the event ends', async () => {
		vi.stubGlobal('SyncManager', class {});
		const raw = indexedDbStore();
		await raw.set('intent:first', stored('first', 'k-1'));
		const {scope, seen, gate, fetch, fire} = setUp();
		const openFirst = gate('k-1');
		installSendOnce(scope, {fetch});

		const synced = fire('sync', {tag: 'sendonce'});
		await vi.waitFor(() => {
			expect(seen).toEqual(['k-1']);
		});
		await raw.set('intent:second', stored('second', 'k-2'));
		openFirst();
		await synced;

		expect(seen).toEqual(['k-1', 'k-2']);
		expect(await notes(raw)).toEqual({'intent:first': ['succeeded', 1], 'intent:second': ['succeeded', 1]});
	});
});

describe('an intent the worker leaves unresolved', () => {
	/** A stored intent never attempted, as a tab leaves it when it closes after `intent()`. */
	const stored = (scope: string, key: string): IntentRecord => {
		const {lease: _, ...rest} = record(scope, key);
		return {...rest, state: 'pending', attempts: 0};
	};

	const activate = (fetch: (input: RequestInfo | URL, init?: RequestInit) => Promise<Response>) => {
		let kept: Promise<unknown> | undefined;
		const listeners = new Map<string, (event: Event) => void>();
		installSendOnce({addEventListener: (type, listener) => listeners.set(type, listener), clients: {matchAll: async () => []}}, {fetch, retry: {limit: 1, budget: false}});
		listeners.get('activate')!(Object.assign(new Event('activate'), {waitUntil: (promise: Promise<unknown>) => {
			kept = promise;
		}}));
		return kept!;
	};

	const signedOut = async () => new Response('{"reason":"no session"}', {status: 401, headers: {'content-type': 'application/json'}});
	const offline = async (): Promise<Response> => {
		throw new TypeError('Failed to fetch');
	};

	test.each([
		// Its only attempt was refused: nothing happened, and the page says so (not "may have reached it").
		['a refusal the worker cannot act on (401)', signedOut, {reason: 'refused', lastStatus: 401}, 'The server refused it (401) before it could happen. Sign in again and retry.'],
		['a network that fails', offline, {reason: 'exhausted', lastError: 'TypeError'}, 'The connection failed before the server could confirm it.'],
	] as const)('%s: the worker stores why, and a page opened later says so', async (_name, fetch, cause, said) => {
		const raw = indexedDbStore();
		await raw.set('intent:contact', stored('contact', 'k-1'));

		await activate(fetch);

		expect(await raw.get('intent:contact')).toMatchObject({key: 'k-1', state: 'unresolved', attempts: 1, ...cause});
		const found = await createClient({store: indexedDbStore()}).get('contact');
		expect(found?.result).toMatchObject({status: 'unresolved', key: 'k-1', reason: cause.reason});
		expect(messages.because(found?.result)).toBe(said);
	});
});
