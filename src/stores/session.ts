import type {IntentStore} from '../core/types.js';

/** Every key sendonce writes to sessionStorage starts with this; other keys are the app's. */
const PREFIX = 'sendonce:';

/**
 * Looked up on every call, never at import: the property itself throws a `SecurityError` in
 * sandboxed iframes and when the user blocks site data.
 */
function storage(): Storage {
	const sessionStorage = globalThis.sessionStorage as Storage | undefined;
	if (!sessionStorage) throw new Error(process.env.NODE_ENV !== 'production' ? 'sessionStorage is not available in this environment' : 'No sessionStorage');
	return sessionStorage;
}

function ownKeys(sessionStorage: Storage): string[] {
	const keys: string[] = [];
	for (let index = 0; index < sessionStorage.length; index++) {
		const key = sessionStorage.key(index);
		if (key?.startsWith(PREFIX)) keys.push(key);
	}

	return keys;
}

/** JSON, or the raw text when it is not: validation then sets it aside instead of throwing. */
function parse(text: string): unknown {
	try {
		return JSON.parse(text) as unknown;
	} catch {
		return text;
	}
}

/**
 * A store in sessionStorage, as JSON under keys prefixed `sendonce:`. It survives a reload
 * and is copied into a duplicated tab, but not kept once the tab is closed. The fallback
 * when IndexedDB cannot be used.
 *
 * @example
 * import {createClient, sessionStore} from 'sendonce';
 *
 * const client = createClient({store: sessionStore()});
 */
export function sessionStore(): IntentStore {
	return {
		durable: true,
		async get(id) {
			const text = storage().getItem(PREFIX + id);
			return text === null ? undefined : parse(text);
		},
		async set(id, value) {
			// Throws the browser's DOMException, so a `QuotaExceededError` keeps its name.
			storage().setItem(PREFIX + id, JSON.stringify(value));
		},
		async update(id, updater) {
			// Synchronous from read to write: nothing else in this tab can run in between, and
			// sessionStorage belongs to one tab.
			const sessionStorage = storage();
			const text = sessionStorage.getItem(PREFIX + id);
			const next = updater(text === null ? undefined : parse(text));
			if (next === undefined) sessionStorage.removeItem(PREFIX + id);
			else sessionStorage.setItem(PREFIX + id, JSON.stringify(next));
		},
		async delete(id) {
			storage().removeItem(PREFIX + id);
		},
		async list() {
			const sessionStorage = storage();
			const pairs: Array<[string, unknown]> = [];
			for (const key of ownKeys(sessionStorage)) {
				const text = sessionStorage.getItem(key);
				if (text !== null) pairs.push([key.slice(PREFIX.length), parse(text)]);
			}

			return pairs;
		},
		async clear() {
			const sessionStorage = storage();
			for (const key of ownKeys(sessionStorage)) sessionStorage.removeItem(key);
		},
	};
}
