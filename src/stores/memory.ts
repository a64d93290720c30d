import type {IntentStore} from '../core/types.js';

/**
 * A deep copy, so that nothing outside the store can change a stored record. Records are plain
 * JSON by their schema; JSON copies them faster than `structuredClone`, and Hermes has it.
 */
export function copy<T>(value: T): T {
	return value === undefined ? value : JSON.parse(JSON.stringify(value)) as T;
}

/**
 * A store that lives as long as the page: `durable` is false. Used when nothing better
 * works, and in tests.
 *
 * @example
 * import {createClient, memoryStore} from 'sendonce';
 *
 * const client = createClient({store: memoryStore()});
 */
export function memoryStore(): IntentStore {
	const map = new Map<string, unknown>();
	const put = (id: string, value: unknown) => {
		if (value === undefined) map.delete(id);
		else map.set(id, copy(value));
	};

	return {
		durable: false,
		async get(id) {
			return copy(map.get(id));
		},
		async set(id, value) {
			map.set(id, copy(value));
		},
		async update(id, updater) {
			// The updater only reads what it is given (sendonce's records are never mutated):
			// only what it returns needs copying in.
			put(id, updater(map.get(id)));
		},
		async updateMany(updates) {
			for (const [id, updater] of updates) put(id, updater(map.get(id)));
		},
		async delete(id) {
			map.delete(id);
		},
		async list() {
			return [...map].map(([id, value]) => [id, copy(value)]);
		},
		async clear() {
			map.clear();
		},
	};
}
