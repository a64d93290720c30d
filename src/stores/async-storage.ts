import type {IntentStore} from '../core/types.js';

/**
 * The parts of `@react-native-async-storage/async-storage` this store uses: the classic API
 * (v1, v2: `multiGet`, `multiRemove`) or v3's (`getMany`, `removeMany`).
 *
 * @example
 * import AsyncStorage from '@react-native-async-storage/async-storage';
 * import type {AsyncStorageLike} from 'sendonce/react-native';
 *
 * const storage: AsyncStorageLike = AsyncStorage;
 */
export interface AsyncStorageLike {
	getItem(key: string): Promise<string | null>;
	setItem(key: string, value: string): Promise<void>;
	removeItem(key: string): Promise<void>;
	getAllKeys(): Promise<readonly string[]>;
	multiGet?(keys: readonly string[]): Promise<ReadonlyArray<readonly [string, string | null]>>;
	multiRemove?(keys: readonly string[]): Promise<void>;
	getMany?(keys: string[]): Promise<Record<string, string | null>>;
	removeMany?(keys: string[]): Promise<void>;
}

/** JSON, or the raw text when it is not: validation then sets it aside instead of throwing. */
function parse(text: string | null | undefined): unknown {
	if (text === null || text === undefined) return undefined;
	try {
		return JSON.parse(text) as unknown;
	} catch {
		return text;
	}
}

/**
 * A store over React Native's AsyncStorage: survives app restarts. Keys are prefixed, so
 * `clear()` removes only sendonce's. A failed write (Android's 6 MB cap shows up as
 * `SQLITE_FULL`) reaches the app as `StoreError`, `STORE_QUOTA`, from `client.intent()`, and
 * nothing that could not be stored is sent.
 *
 * @example
 * import AsyncStorage from '@react-native-async-storage/async-storage';
 * import {createClient} from 'sendonce';
 * import {asyncStorageStore} from 'sendonce/react-native';
 *
 * const client = createClient({store: asyncStorageStore(AsyncStorage)});
 */
export function asyncStorageStore(storage: AsyncStorageLike, {prefix = 'sendonce:'}: {
	/**
	 * Put before every key sendonce writes.
	 * @default 'sendonce:'
	 */
	prefix?: string;
} = {}): IntentStore {
	const ownKeys = async () => (await storage.getAllKeys()).filter(key => key.startsWith(prefix));
	const store: IntentStore = {
		durable: true,
		async get(id) {
			return parse(await storage.getItem(prefix + id));
		},
		async set(id, value) {
			await storage.setItem(prefix + id, JSON.stringify(value));
		},
		async update(id, updater) {
			// AsyncStorage has no transactions; one app runs one sender per key anyway.
			const next = updater(await store.get(id));
			await (next === undefined ? store.delete(id) : store.set(id, next));
		},
		async delete(id) {
			await storage.removeItem(prefix + id);
		},
		async list() {
			const keys = await ownKeys();
			if (keys.length === 0) return [];
			const pairs: ReadonlyArray<readonly [string, string | null]> = storage.multiGet
				? await storage.multiGet(keys)
				: Object.entries(await storage.getMany!(keys));
			return pairs
				.filter(([, text]) => text !== null)
				.map(([key, text]): [string, unknown] => [key.slice(prefix.length), parse(text)]);
		},
		async clear() {
			const keys = await ownKeys();
			if (keys.length === 0) return;
			await (storage.multiRemove ? storage.multiRemove(keys) : storage.removeMany!(keys));
		},
	};
	return store;
}
