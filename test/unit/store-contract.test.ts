import {IDBDatabase, IDBFactory, IDBObjectStore} from 'fake-indexeddb';
import {createStore, get as idbGet, set as idbSet} from 'idb-keyval';
import {afterEach, beforeEach, describe, expect, test, vi} from 'vitest';
import {
	createClient,
	indexedDbStore,
	memoryStore,
	sessionStore,
	StoreError,
	type IntentStore,
	type SendOnceEvent,
} from '../../src/index.js';
import type {IntentRecord} from '../../src/core/record.js';
import {PROBE_TIMEOUT} from '../../src/core/probe.js';
import {resolveStore} from '../../src/stores/resolve.js';
import {trapBrowserGlobals} from './ssr-traps.js';

/** sessionStorage as the browser has it, in memory. */
class MemoryStorage implements Storage {
	readonly #items = new Map<string, string>();

	get length(): number {
		return this.#items.size;
	}

	key(index: number): string | null {
		return [...this.#items.keys()][index] ?? null;
	}

	getItem(key: string): string | null {
		return this.#items.get(key) ?? null;
	}

	setItem(key: string, value: string): void {
		this.#items.set(key, String(value));
	}

	removeItem(key: string): void {
		this.#items.delete(key);
	}

	clear(): void {
		this.#items.clear();
	}

	[name: string]: unknown;
}

function quotaError(): DOMException {
	return new DOMException('The quota has been exceeded.', 'QuotaExceededError');
}

function record(scope: string, overrides: Partial<IntentRecord> = {}): IntentRecord {
	return {
		v: 1,
		key: `key-${scope}`,
		scope,
		state: 'pending',
		request: {url: 'https://api.example/orders', method: 'POST', headers: {'content-type': 'application/json'}, body: '{"order":"a-1"}'},
		fingerprint: 'a'.repeat(64),
		attempts: 0,
		createdAt: 1_700_000_000_000,
		expiresAt: 1_700_086_400_000,
		updatedAt: 1_700_000_000_000,
		...overrides,
	};
}

afterEach(() => {
	vi.unstubAllGlobals();
	vi.restoreAllMocks();
	vi.useRealTimers();
});

/**
 * One backing (a fresh browser profile, in effect) per test. `open` makes a new store
 * instance over it, as a reload would; `foreign` writes and reads a value that belongs to
 * someone else in the same backing.
 */
interface Backing {
	open(): IntentStore;
	foreign: {put(): Promise<void>; read(): Promise<unknown>};
}

const backings: Array<{name: string; create(): Backing}> = [
	{
		name: 'memoryStore',
		create() {
			const other = memoryStore();
			return {
				open: memoryStore,
				foreign: {
					async put() {
						await other.set('intent:theirs', 'kept');
					},
					async read() {
						return other.get('intent:theirs');
					},
				},
			};
		},
	},
	{
		name: 'indexedDbStore',
		create() {
			vi.stubGlobal('indexedDB', new IDBFactory());
			return {
				open: indexedDbStore,
				foreign: {
					async put() {
						await idbSet('intent:theirs', 'kept', createStore('app', 'intents'));
					},
					async read() {
						return idbGet('intent:theirs', createStore('app', 'intents'));
					},
				},
			};
		},
	},
	{
		name: 'sessionStore',
		create() {
			const storage = new MemoryStorage();
			vi.stubGlobal('sessionStorage', storage);
			return {
				open: sessionStore,
				foreign: {
					async put() {
						storage.setItem('intent:theirs', 'kept');
					},
					async read() {
						return storage.getItem('intent:theirs') ?? undefined;
					},
				},
			};
		},
	},
];

describe.each(backings)('store contract: $name', ({create}) => {
	let backing: Backing;
	let store: IntentStore;
	beforeEach(() => {
		backing = create();
		store = backing.open();
	});

	test('get of a missing id is undefined', async () => {
		expect(await store.get('intent:missing')).toBeUndefined();
	});

	test('set then get round-trips a record', async () => {
		await store.set('intent:order', record('order'));
		expect(await store.get('intent:order')).toEqual(record('order'));
	});

	test('set replaces the value under the same id', async () => {
		await store.set('intent:order', record('order'));
		await store.set('intent:order', record('order', {state: 'sending', attempts: 1}));
		expect(await store.get('intent:order')).toEqual(record('order', {state: 'sending', attempts: 1}));
		expect(await store.list()).toHaveLength(1);
	});

	test('the stored value is a copy: mutating what was set or got changes nothing', async () => {
		const value = record('order');
		await store.set('intent:order', value);
		value.state = 'succeeded';
		value.request.headers.authorization = 'Bearer secret';

		const got = await store.get('intent:order') as IntentRecord;
		expect(got).toEqual(record('order'));
		got.attempts = 99;
		got.request.url = 'https://evil.example';
		expect(await store.get('intent:order')).toEqual(record('order'));

		const [[, listed] = []] = await store.list();
		(listed as IntentRecord).scope = 'other';
		expect(await store.get('intent:order')).toEqual(record('order'));
	});

	test('list returns every [id, value] pair', async () => {
		expect(await store.list()).toEqual([]);
		await store.set('intent:a', record('a'));
		await store.set('intent:b:with:colons', record('b:with:colons'));
		await store.set('set-aside:intent:c', {setAside: true, value: 'junk'});

		const listed = await store.list();
		expect(Object.fromEntries(listed)).toEqual({
			'intent:a': record('a'),
			'intent:b:with:colons': record('b:with:colons'),
			'set-aside:intent:c': {setAside: true, value: 'junk'},
		});
		expect(listed).toHaveLength(3);
	});

	test('delete removes one id and ignores a missing one', async () => {
		await store.set('intent:a', record('a'));
		await store.set('intent:b', record('b'));
		await store.delete('intent:a');
		await store.delete('intent:never-there');

		expect(await store.get('intent:a')).toBeUndefined();
		expect(await store.list()).toEqual([['intent:b', record('b')]]);
	});

	test('update replaces a value with what the updater returns for the old one', async () => {
		const seen: unknown[] = [];
		await store.update!('intent:order', old => {
			seen.push(old);
			return record('order');
		});
		await store.update!('intent:order', old => {
			seen.push(old);
			return {...(old as IntentRecord), state: 'sending', attempts: 1};
		});

		expect(seen).toEqual([undefined, record('order')]);
		expect(await store.get('intent:order')).toEqual(record('order', {state: 'sending', attempts: 1}));
	});

	test('update to undefined deletes the value', async () => {
		await store.set('intent:order', record('order'));
		await store.update!('intent:order', () => undefined);
		expect(await store.get('intent:order')).toBeUndefined();
		expect(await store.list()).toEqual([]);
	});

	test('concurrent updates see each other\'s writes', async () => {
		await Promise.all(Array.from({length: 20}, async () => store.update!('lease:order', old => (typeof old === 'number' ? old + 1 : 1))));
		expect(await store.get('lease:order')).toBe(20);
	});

	test('an updater that throws rejects and changes nothing', async () => {
		await store.set('intent:order', record('order'));
		const failing = store.update!('intent:order', () => {
			throw new Error('updater failed');
		});
		await expect(failing).rejects.toThrow('updater failed');
		expect(await store.get('intent:order')).toEqual(record('order'));
	});

	test('clear empties the store and only its own keys', async () => {
		await backing.foreign.put();
		await store.set('intent:a', record('a'));
		await store.set('intent:b', record('b'));
		await store.clear!();

		expect(await store.list()).toEqual([]);
		expect(await backing.foreign.read()).toBe('kept');
	});

	test('foreign values in the same backing are not listed', async () => {
		await backing.foreign.put();
		expect(await store.list()).toEqual([]);
		expect(await store.get('intent:theirs')).toBeUndefined();
	});

	test('a new instance over the same backing (a reload) sees the values exactly when the store is durable', async () => {
		await store.set('intent:order', record('order'));
		const reloaded = backing.open();

		if (store.durable === false) {
			expect(await reloaded.list()).toEqual([]);
		} else {
			expect(await reloaded.get('intent:order')).toEqual(record('order'));
			expect(await reloaded.list()).toEqual([['intent:order', record('order')]]);
		}
	});
});

describe('durability flags', () => {
	test('memory is not durable; IndexedDB and sessionStorage are', () => {
		expect(memoryStore().durable).toBe(false);
		expect(indexedDbStore().durable).toBe(true);
		expect(sessionStore().durable).toBe(true);
	});
});

describe('indexedDbStore', () => {
	beforeEach(() => {
		vi.stubGlobal('indexedDB', new IDBFactory());
	});

	test('opens nothing until first used', async () => {
		const open = vi.spyOn(globalThis.indexedDB, 'open');
		const store = indexedDbStore();
		expect(open).not.toHaveBeenCalled();

		await store.list();
		expect(open).toHaveBeenCalledTimes(1);
		expect(open).toHaveBeenCalledWith('sendonce');
	});

	test('reopens the database when the browser closed the connection without a close event', async () => {
		const used: IDBDatabase[] = [];
		const transaction = IDBDatabase.prototype.transaction;
		vi.spyOn(IDBDatabase.prototype, 'transaction').mockImplementation(function (this: IDBDatabase, ...args: Parameters<IDBDatabase['transaction']>) {
			used.push(this);
			return transaction.apply(this, args);
		});
		const store = indexedDbStore();
		await store.set('intent:order', record('order'));
		// What iOS does on resume: the connection is gone, and every transaction throws
		// "InvalidStateError: The database connection is closing".
		used[0]!.close();

		expect(await store.get('intent:order')).toEqual(record('order'));
		expect(new Set(used).size).toBe(2);
	});

	test('a store failure is passed on with its DOMException name', async () => {
		vi.spyOn(IDBObjectStore.prototype, 'put').mockImplementation(() => {
			throw quotaError();
		});
		await expect(indexedDbStore().set('intent:order', record('order'))).rejects.toMatchObject({name: 'QuotaExceededError'});
	});

	test('insert writes a new record in one transaction without a read, and asks the updater when a record is stored', async () => {
		const store = indexedDbStore();
		const read = vi.spyOn(IDBObjectStore.prototype, 'get');
		const transaction = vi.spyOn(IDBDatabase.prototype, 'transaction');
		await store.insert!('intent:order', record('order'), () => {
			throw new Error('nothing was stored: the updater is not asked');
		});
		expect(read).not.toHaveBeenCalled();
		// Opening the database (its upgrade) aside.
		expect(transaction.mock.calls.map(call => call[1]).filter(mode => mode !== 'versionchange')).toEqual(['readwrite']);
		expect(await store.get('intent:order')).toEqual(record('order'));

		const seen: unknown[] = [];
		await store.insert!('intent:order', record('order', {key: 'key-new'}), old => {
			seen.push(old);
			return {...(old as IntentRecord), attempts: 1};
		});
		expect(seen).toEqual([record('order')]);
		expect(await store.get('intent:order')).toEqual(record('order', {attempts: 1}));
	});

	test('lists only string ids: other keys in the object store are not sendonce\'s', async () => {
		const store = indexedDbStore();
		await store.set('intent:order', record('order'));
		await idbSet(42, 'someone else', createStore('sendonce', 'intents'));
		expect(await store.list()).toEqual([['intent:order', record('order')]]);
	});

	test('rejects when IndexedDB does not exist', async () => {
		vi.stubGlobal('indexedDB', undefined);
		await expect(indexedDbStore().get('intent:order')).rejects.toThrow(/IndexedDB is not available/);
	});
});

describe('sessionStore', () => {
	test('writes JSON under keys prefixed "sendonce:"', async () => {
		const storage = new MemoryStorage();
		vi.stubGlobal('sessionStorage', storage);
		await sessionStore().set('intent:order', record('order'));

		expect(storage.length).toBe(1);
		expect(JSON.parse(storage.getItem('sendonce:intent:order')!)).toEqual(record('order'));
	});

	test('gives back text that is not JSON as it is, for validation to set aside', async () => {
		const storage = new MemoryStorage();
		vi.stubGlobal('sessionStorage', storage);
		storage.setItem('sendonce:intent:order', '{not json');

		expect(await sessionStore().get('intent:order')).toBe('{not json');
		expect(await sessionStore().list()).toEqual([['intent:order', '{not json']]);
	});

	test('reads sessionStorage at each call, not when created, and rejects when it is blocked', async () => {
		const store = sessionStore();
		vi.stubGlobal('sessionStorage', undefined);
		Object.defineProperty(globalThis, 'sessionStorage', {
			configurable: true,
			get() {
				throw new DOMException('Access is denied for this document.', 'SecurityError');
			},
		});
		await expect(store.list()).rejects.toMatchObject({name: 'SecurityError'});

		vi.unstubAllGlobals();
		vi.stubGlobal('sessionStorage', new MemoryStorage());
		await store.set('intent:order', record('order'));
		expect(await store.list()).toEqual([['intent:order', record('order')]]);
	});
});

describe('resolveStore', () => {
	function collect(): {events: SendOnceEvent[]; emit: (event: SendOnceEvent) => void} {
		const events: SendOnceEvent[] = [];
		return {events, emit: event => events.push(event)};
	}

	/** A backing that answers but refuses every write, as Firefox's private mode did. */
	function refuseIndexedDbWrites(): void {
		vi.stubGlobal('indexedDB', new IDBFactory());
		vi.spyOn(IDBObjectStore.prototype, 'put').mockImplementation(() => {
			throw new DOMException('A mutation operation was attempted on a database that did not allow mutations.', 'InvalidStateError');
		});
	}

	function blockSessionStorage(): void {
		const storage = new MemoryStorage();
		storage.setItem = () => {
			throw new DOMException('Access is denied for this document.', 'SecurityError');
		};
		vi.stubGlobal('sessionStorage', storage);
	}

	test('a custom store is used as it is', async () => {
		const custom = memoryStore();
		const {events, emit} = collect();
		expect(await resolveStore(custom, emit)).toBe(custom);
		expect(events).toEqual([]);
	});

	test('\'memory\' is a memory store', async () => {
		const store = await resolveStore('memory', () => undefined);
		expect(store.durable).toBe(false);
	});

	test('auto picks IndexedDB when it works, without an event and without leaving the probe behind', async () => {
		vi.stubGlobal('indexedDB', new IDBFactory());
		vi.stubGlobal('sessionStorage', new MemoryStorage());
		const {events, emit} = collect();
		const store = await resolveStore('auto', emit);

		await store.set('intent:order', record('order'));
		expect(await indexedDbStore().get('intent:order')).toEqual(record('order'));
		expect(await store.list()).toEqual([['intent:order', record('order')]]);
		expect(sessionStorage.length).toBe(0);
		expect(events).toEqual([]);
	});

	test('auto falls back to sessionStorage when IndexedDB is missing', async () => {
		vi.stubGlobal('indexedDB', undefined);
		const storage = new MemoryStorage();
		vi.stubGlobal('sessionStorage', storage);
		const {events, emit} = collect();
		const store = await resolveStore('auto', emit);

		await store.set('intent:order', record('order'));
		expect(storage.getItem('sendonce:intent:order')).not.toBeNull();
		expect(events).toEqual([{type: 'store-degraded', store: 'session', error: expect.objectContaining({code: 'STORE_UNAVAILABLE', message: expect.stringMatching(/IndexedDB/)})}]);
		expect(storage.length).toBe(1);
	});

	test('auto falls back to sessionStorage when IndexedDB refuses to write', async () => {
		refuseIndexedDbWrites();
		vi.stubGlobal('sessionStorage', new MemoryStorage());
		const {events, emit} = collect();
		const store = await resolveStore('auto', emit);

		expect(store.durable).toBe(true);
		await store.set('intent:order', record('order'));
		expect(sessionStorage.getItem('sendonce:intent:order')).not.toBeNull();
		expect(events).toMatchObject([{type: 'store-degraded', store: 'session', error: {name: 'StoreError', message: expect.stringMatching(/did not allow mutations/)}}]);
	});

	test('auto falls back to sessionStorage when IndexedDB never opens', async () => {
		vi.useFakeTimers({toFake: ['setTimeout', 'clearTimeout']});
		vi.stubGlobal('indexedDB', {open: () => ({})});
		vi.stubGlobal('sessionStorage', new MemoryStorage());
		const {events, emit} = collect();
		const resolving = resolveStore('auto', emit);

		await vi.advanceTimersByTimeAsync(PROBE_TIMEOUT);
		const store = await resolving;
		await store.set('intent:order', record('order'));
		expect(sessionStorage.getItem('sendonce:intent:order')).not.toBeNull();
		expect(events).toMatchObject([{type: 'store-degraded', store: 'session', error: {message: expect.stringMatching(/did not answer within 1500 ms/)}}]);
	});

	test('auto falls back to memory when neither IndexedDB nor sessionStorage works', async () => {
		refuseIndexedDbWrites();
		blockSessionStorage();
		const {events, emit} = collect();
		const store = await resolveStore('auto', emit);

		expect(store.durable).toBe(false);
		expect(events).toHaveLength(1);
		expect(events[0]).toMatchObject({
			type: 'store-degraded',
			store: 'memory',
			error: {name: 'StoreError', code: 'STORE_UNAVAILABLE', message: expect.stringMatching(/IndexedDB cannot be used.*sessionStorage cannot be used/)},
		});
	});

	test('auto in a server-side render (no browser globals) is memory', async () => {
		vi.stubGlobal('indexedDB', undefined);
		vi.stubGlobal('sessionStorage', undefined);
		const {events, emit} = collect();
		expect((await resolveStore('auto', emit)).durable).toBe(false);
		expect(events).toMatchObject([{type: 'store-degraded', store: 'memory'}]);
	});

	test.each([
		['indexeddb', () => vi.stubGlobal('indexedDB', undefined)],
		['indexeddb', refuseIndexedDbWrites],
		['session', () => vi.stubGlobal('sessionStorage', undefined)],
		['session', blockSessionStorage],
	] as const)('a forced \'%s\' store that cannot work rejects with StoreError STORE_UNAVAILABLE', async (option, breakIt) => {
		breakIt();
		const {events, emit} = collect();
		const resolving = resolveStore(option, emit);

		await expect(resolving).rejects.toBeInstanceOf(StoreError);
		await expect(resolving).rejects.toMatchObject({code: 'STORE_UNAVAILABLE'});
		expect(events).toEqual([]);
	});

	test.each(['indexeddb', 'session'] as const)('a forced \'%s\' store that works is used', async option => {
		vi.stubGlobal('indexedDB', new IDBFactory());
		vi.stubGlobal('sessionStorage', new MemoryStorage());
		const store = await resolveStore(option, () => undefined);
		await store.set('intent:order', record('order'));

		const written = option === 'session' ? sessionStorage.getItem('sendonce:intent:order') : await indexedDbStore().get('intent:order');
		expect(written).toBeTruthy();
	});
});

describe('client over the stores', () => {
	test('client.durable is false for memory and true for sessionStorage', async () => {
		vi.stubGlobal('sessionStorage', new MemoryStorage());
		expect(await createClient({store: 'memory'}).durable).toBe(false);
		expect(await createClient({store: 'session'}).durable).toBe(true);
		expect(await createClient({store: 'auto'}).durable).toBe(true);
	});

	const quotaStores: Array<[string, () => IntentStore]> = [
		['a custom store', () => ({
			...memoryStore(),
			async set() {
				throw quotaError();
			},
			async update() {
				throw quotaError();
			},
		})],
		['sessionStorage', () => {
			const storage = new MemoryStorage();
			storage.setItem = () => {
				throw quotaError();
			};
			vi.stubGlobal('sessionStorage', storage);
			return sessionStore();
		}],
		['IndexedDB', () => {
			vi.stubGlobal('indexedDB', new IDBFactory());
			// A full disk refuses every write: a new intent's first one is an `add`.
			for (const write of ['put', 'add'] as const) {
				vi.spyOn(IDBObjectStore.prototype, write).mockImplementation(() => {
					throw quotaError();
				});
			}

			return indexedDbStore();
		}],
	];

	test.each(quotaStores)('a full %s: intent() rejects with StoreError STORE_QUOTA and nothing is sent', async (_name, makeStore) => {
		const fetch = vi.fn(async () => new Response('{}', {status: 201}));
		const store = makeStore();
		const client = createClient({store, fetch});

		const creating = client.intent('order', {url: 'https://api.example/orders', json: {order: 'a-1'}});
		await expect(creating).rejects.toBeInstanceOf(StoreError);
		await expect(creating).rejects.toMatchObject({code: 'STORE_QUOTA', cause: {name: 'QuotaExceededError'}});
		expect(await client.resume()).toEqual([]);
		expect(fetch).not.toHaveBeenCalled();
		expect(await store.list()).toEqual([]);
	});
});

describe('server-side rendering', () => {
	test('importing sendonce touches no browser global', async () => {
		const touched = trapBrowserGlobals();

		vi.resetModules();
		const sendonce = await import('../../src/index.js');
		sendonce.createClient();
		sendonce.indexedDbStore();
		sendonce.sessionStore();
		expect(touched).toEqual([]);
	});
});
