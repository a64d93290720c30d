import {StoreError} from '../errors/store-error.js';
import type {IntentStore, SendOnceEvent, StoreOption} from '../types.js';
import {checkedIndexedDbStore} from './indexeddb.js';
import {memoryStore} from './memory.js';
import {probe, roundTrip} from './probe.js';
import {sessionStore} from './session.js';

/** IndexedDB, proven to work by a real write (rejects with `StoreError` otherwise). */
async function openIndexedDb(): Promise<IntentStore> {
	const {store, check} = checkedIndexedDbStore();
	await probe('IndexedDB', check);
	return store;
}

/** sessionStorage, proven to work by a real write (rejects with `StoreError` otherwise). */
async function openSession(): Promise<IntentStore> {
	const store = sessionStore();
	await probe('sessionStorage', async () => roundTrip(store));
	return store;
}

/**
 * Turns the `store` option into a working store. `'auto'` takes the first of IndexedDB,
 * sessionStorage and memory that works and reports a fallback as a `store-degraded` event;
 * a named store is used only if it works, else this rejects with `StoreError`
 * (`STORE_UNAVAILABLE`). Browser globals are touched only here, never at import.
 */
export async function resolveStore(option: StoreOption, emit: (event: SendOnceEvent) => void): Promise<IntentStore> {
	if (typeof option === 'object') return option;
	if (option === 'memory') return memoryStore();
	if (option === 'indexeddb') return openIndexedDb();
	if (option === 'session') return openSession();

	let indexedDbError: unknown;
	try {
		return await openIndexedDb();
	} catch (error) {
		indexedDbError = error;
	}

	try {
		const store = await openSession();
		emit({type: 'store-degraded', store: 'session', error: indexedDbError});
		return store;
	} catch (sessionError) {
		const reasons = [indexedDbError, sessionError].map(error => (error instanceof Error ? error.message : String(error)));
		emit({
			type: 'store-degraded',
			store: 'memory',
			error: new StoreError(
				'STORE_UNAVAILABLE',
				`${reasons.join('; ')}; intents are kept in memory and lost when the page is closed or reloaded`,
				{cause: [indexedDbError, sessionError]},
			),
		});
		return memoryStore();
	}
}
