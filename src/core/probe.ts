import {StoreError} from './errors/store-error.js';
import type {IntentStore} from './types.js';

/**
 * How long a store may take to prove it works, in milliseconds. Safari can leave
 * `indexedDB.open` pending forever; a store that has not answered by then is not used.
 */
export const PROBE_TIMEOUT = 1500;

/**
 * Resolves when `check` does within `timeout`; otherwise rejects with a `StoreError`
 * (`STORE_UNAVAILABLE`) that says what failed. A check that is still pending is abandoned.
 */
export async function probe(what: string, check: () => Promise<void>, timeout = PROBE_TIMEOUT): Promise<void> {
	let timer: ReturnType<typeof setTimeout> | undefined;
	const expired = new Promise<never>((_resolve, reject) => {
		timer = setTimeout(() => {
			reject(Object.assign(new Error(`it did not answer within ${timeout} ms`), {name: 'TimeoutError'}));
		}, timeout);
	});
	try {
		// `then` turns a synchronous throw (a blocked global) into a rejection.
		await Promise.race([Promise.resolve().then(check), expired]);
	} catch (error) {
		const detail = error instanceof Error ? error.message : String(error);
		throw new StoreError('STORE_UNAVAILABLE', `${what} cannot be used: ${detail}`, {cause: error});
	} finally {
		clearTimeout(timer);
	}
}

/** A real write, read and delete through a store's own methods. */
export async function roundTrip(store: IntentStore): Promise<void> {
	// One fixed name: sessionStorage belongs to one tab, so no other check can see it.
	const id = 'sendonce:probe';
	await store.set(id, id);
	try {
		if (await store.get(id) !== id) throw new Error('it did not return what was written to it');
	} finally {
		await store.delete(id);
	}
}
