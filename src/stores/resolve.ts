import {StoreError} from '../core/errors/store-error.js';
import type {IntentStore, SendOnceEvent, StoreOption} from '../core/types.js';
import {memoryStore} from './memory.js';
import {probe, roundTrip} from '../core/probe.js';

// The browser stores are imported when a client first needs one, never before: an app with a
// memory or custom store, or one rendered on a server, does not load their code.
const loadIndexedDb = async () => import('./indexeddb.js');
const loadSession = async () => import('./session.js');

/** IndexedDB, proven to work by a real write (rejects with `StoreError` otherwise). */
async function openIndexedDb(): Promise<IntentStore> {
	const {store, check} = (await loadIndexedDb()).checkedIndexedDbStore();
	await probe('IndexedDB', check);
	return store;
}

/** sessionStorage, proven to work by a real write (rejects with `StoreError` otherwise). */
async function openSession(): Promise<IntentStore> {
	const store = (await loadSession()).sessionStore();
	await probe('sessionStorage', async () => roundTrip(store));
	return store;
}

/** The store chosen, and the durable stores `'auto'` did not choose this time. */
export interface ResolvedStore {
	store: IntentStore;
	/**
	 * Where an earlier page load may have stored intents because `'auto'` chose differently
	 * then (IndexedDB hung on that load, or refuses writes on this one). Each may fail to read.
	 */
	others: IntentStore[];
}

/**
 * Turns the `store` option into a working store. `'auto'` takes the first of IndexedDB,
 * sessionStorage and memory that works and reports a fallback as a `store-degraded` event;
 * a named store is used only if it works, else this rejects with `StoreError`
 * (`STORE_UNAVAILABLE`). Browser globals are touched only here, never at import.
 */
export async function resolveStoreWithOthers(option: StoreOption, emit: (event: SendOnceEvent) => void): Promise<ResolvedStore> {
	if (typeof option === 'object') return {store: option, others: []};
	if (option === 'memory') return {store: memoryStore(), others: []};
	if (option === 'indexeddb') return {store: await openIndexedDb(), others: []};
	if (option === 'session') return {store: await openSession(), others: []};

	let indexedDbError: unknown;
	try {
		return {store: await openIndexedDb(), others: [(await loadSession()).sessionStore()]};
	} catch (error) {
		indexedDbError = error;
	}

	try {
		const store = await openSession();
		emit({type: 'store-degraded', store: 'session', error: indexedDbError});
		// IndexedDB that answers but refuses writes may still be read; one that hangs is left alone.
		const hung = (indexedDbError as {cause?: {name?: unknown}}).cause?.name === 'TimeoutError';
		return {store, others: hung || !globalThis.indexedDB ? [] : [(await loadIndexedDb()).indexedDbStore()]};
	} catch (sessionError) {
		const reasons = [indexedDbError, sessionError].map(error => (error instanceof Error ? error.message : String(error)));
		emit({
			type: 'store-degraded',
			store: 'memory',
			error: new StoreError(
				'STORE_UNAVAILABLE',
				`${reasons.join('; ')}; intents are kept in memory only`,
				{cause: [indexedDbError, sessionError]},
			),
		});
		return {store: memoryStore(), others: []};
	}
}

/** {@link resolveStoreWithOthers}, the chosen store alone. */
export async function resolveStore(option: StoreOption, emit: (event: SendOnceEvent) => void): Promise<IntentStore> {
	return (await resolveStoreWithOthers(option, emit)).store;
}
