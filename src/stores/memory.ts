import type {IntentStore} from '../types.js';

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
			const value = updater(map.get(id));
			if (value === undefined) map.delete(id);
			else map.set(id, copy(value));
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
