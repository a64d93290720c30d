import {clear, del, entries, get, promisifyRequest, set, type UseStore} from 'idb-keyval';
import type {IntentStore} from '../core/types.js';

/** sendonce's own database, never idb-keyval's shared `keyval-store`. */
const DATABASE = 'sendonce';
const OBJECT_STORE = 'intents';

/**
 * Whether the browser closed the connection under us. Safari (iOS after a resume, or when
 * it tears down its IndexedDB server) closes it without the `close` event that makes
 * idb-keyval open a new one, and every later transaction throws.
 */
function isClosedConnection(error: unknown): boolean {
	if (typeof error !== 'object' || error === null) return false;
	const {name, message} = error as {name?: unknown; message?: unknown};
	return name === 'InvalidStateError'
		|| (typeof message === 'string' && /connection .*(?:is closing|lost)/i.test(message));
}

/**
 * idb-keyval's `createStore`, and one thing more: another tab's upgrade or `deleteDatabase`
 * waits until every connection to the database closes, so ours closes at once on
 * `versionchange` (an idle tab must block no one), and the next use opens the database again.
 */
function createStore(): UseStore {
	let opening: Promise<IDBDatabase> | undefined;
	const database = (): Promise<IDBDatabase> => {
		if (opening) return opening;
		const request = indexedDB.open(DATABASE);
		request.onupgradeneeded = () => request.result.createObjectStore(OBJECT_STORE);
		const opened = promisifyRequest(request);
		const forget = () => {
			if (opening === opened) opening = undefined;
		};

		opening = opened;
		opened.then(db => {
			db.onversionchange = () => {
				db.close();
				forget();
			};
			db.onclose = forget;
		}, forget);
		return opened;
	};

	return async (mode, callback) => callback((await database()).transaction(OBJECT_STORE, mode).objectStore(OBJECT_STORE));
}

/**
 * idb-keyval's `UseStore` for the `sendonce` database: the database is opened on first use,
 * never at import, and opened again (once per call) when the browser closed the connection.
 */
function connect(): UseStore {
	let use: UseStore | undefined;
	const open = (): UseStore => {
		// A bare `indexedDB` inside idb-keyval would throw a ReferenceError; say what is wrong.
		if (!globalThis.indexedDB) throw new Error(process.env.NODE_ENV !== 'production' ? 'IndexedDB is not available in this environment' : 'No IndexedDB');
		use ??= createStore();
		return use;
	};

	return async (mode, callback) => {
		try {
			return await open()(mode, callback);
		} catch (error) {
			if (!isClosedConnection(error)) throw error;
			// A fresh `createStore` drops idb-keyval's cached (closed) connection.
			use = undefined;
			return open()(mode, callback);
		}
	};
}

function storeOver(use: UseStore): IntentStore {
	const store: IntentStore = {
		durable: true,
		shared: true,
		async get(id) {
			return get(id, use);
		},
		async set(id, value) {
			// Rejects with the browser's DOMException, so a `QuotaExceededError` keeps its name.
			await set(id, value, use);
		},
		async update(id, updater) {
			await store.updateMany!([[id, updater]]);
		},
		async updateMany(updates) {
			// One readwrite transaction, so no other tab writes between the reads and the writes.
			// Each write is issued from its read's `onsuccess`, not after an `await`: as in
			// idb-keyval's own `update`, the transaction must still be active.
			await use('readwrite', async objectStore => new Promise<void>((resolve, reject) => {
				const {transaction} = objectStore;
				// The updater's own error (a full disk on `put`) wins over the abort it causes.
				let failure: unknown;
				transaction.oncomplete = () => resolve();
				transaction.onerror = transaction.onabort = () => reject(failure ?? transaction.error);
				let unread = updates.length;
				for (const [id, updater] of updates) {
					const read = objectStore.get(id);
					read.onsuccess = () => {
						try {
							const next = updater(read.result);
							if (next === undefined) objectStore.delete(id);
							else if (next !== read.result) objectStore.put(next, id);
							// Every write is issued: commit now rather than when the page's task ends.
							if (--unread === 0) transaction.commit?.();
						} catch (error) {
							failure ??= error;
							transaction.abort();
						}
					};
				}
			}));
		},
		async insert(id, value, updater) {
			// `add` writes only where nothing is stored, committed at once without a read: one round
			// trip to the browser's storage instead of two. Where it fails (something is stored, and
			// the transaction aborts), the read and write follow in a transaction of their own, which
			// also surfaces any other error.
			try {
				await use('readwrite', async objectStore => {
					objectStore.add(value, id);
					objectStore.transaction.commit?.();
					return promisifyRequest(objectStore.transaction);
				});
			} catch {
				await store.update!(id, updater);
			}
		},
		async delete(id) {
			await del(id, use);
		},
		async list() {
			const all = await entries(use);
			// Only string ids can be sendonce's; anything else was put there by someone else.
			return all.filter((entry): entry is [string, unknown] => typeof entry[0] === 'string');
		},
		async clear() {
			await clear(use);
		},
	};
	return store;
}

/**
 * A store in IndexedDB (database `sendonce`, object store `intents`): survives reloads and
 * browser restarts. Values are structured-cloned, so records come back as copies.
 *
 * @example
 * import {createClient, indexedDbStore} from 'sendonce';
 *
 * const client = createClient({store: indexedDbStore()});
 */
export function indexedDbStore(): IntentStore {
	return storeOver(connect());
}

/**
 * An IndexedDB store and a check that it works: a write, a read and a delete in a single
 * transaction, so a page that dies during the check leaves nothing behind.
 * @internal For `resolveStore`.
 */
export function checkedIndexedDbStore(): {store: IntentStore; check: () => Promise<void>} {
	const use = connect();
	return {
		store: storeOver(use),
		async check() {
			// One fixed name: the check runs in a single transaction (IndexedDB) or in one tab
			// (sessionStorage), so no other check can see it.
			const id = 'sendonce:probe';
			const written = await use('readwrite', async objectStore => {
				objectStore.put(id, id);
				const read = objectStore.get(id);
				objectStore.delete(id);
				await promisifyRequest(objectStore.transaction);
				return read.result as unknown;
			});
			if (written !== id) throw new Error(process.env.NODE_ENV !== 'production' ? 'IndexedDB did not return what was written to it' : 'IndexedDB lost a write');
		},
	};
}
