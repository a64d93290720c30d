import {StoreError} from './errors/store-error.js';
import {parseRecord, type IntentRecord} from './record-schema.js';
import {toStoreError} from './store-errors.js';
import type {IntentStore, SendOnceEvent} from './types.js';

const INTENT = 'intent:';
const SET_ASIDE = 'set-aside:';

/** A record that could not be used, kept for inspection and never sent. */
export interface SetAsideRecord {
	setAside: true;
	at: number;
	problem: string;
	value: unknown;
}

/**
 * The core's view of a store: ids per scope, every read validated, invalid and foreign
 * records moved aside and reported, every failure a `StoreError`.
 */
export class Records {
	readonly #store: () => Promise<IntentStore>;
	readonly #emit: (event: SendOnceEvent) => void;

	constructor(store: () => Promise<IntentStore>, emit: (event: SendOnceEvent) => void) {
		this.#store = store;
		this.#emit = emit;
	}

	/** Whether other tabs use this store at once (see `IntentStore.shared`). */
	async shared(): Promise<boolean> {
		return (await this.#store()).shared === true;
	}

	async read(scope: string): Promise<IntentRecord | undefined> {
		const store = await this.#store();
		let value: unknown;
		try {
			value = await store.get(INTENT + scope);
		} catch (error) {
			throw toStoreError(error, `read the intent for "${scope}"`);
		}

		return value === undefined || value === null ? undefined : this.#check(store, INTENT + scope, value);
	}

	/** Every valid record in the store. */
	async all(): Promise<IntentRecord[]> {
		const store = await this.#store();
		let entries: Array<[string, unknown]>;
		try {
			entries = await store.list();
		} catch (error) {
			throw toStoreError(error, 'list the stored intents');
		}

		const records: IntentRecord[] = [];
		for (const [id, value] of entries) {
			if (id.startsWith(SET_ASIDE) || value === undefined || value === null) continue;
			const record = await this.#check(store, id, value);
			if (record) records.push(record);
		}

		return records;
	}

	async write(record: IntentRecord): Promise<void> {
		const store = await this.#store();
		try {
			await store.set(INTENT + record.scope, record);
		} catch (error) {
			throw toStoreError(error, `store the intent for "${record.scope}"`);
		}
	}

	/**
	 * Changes the record for `scope` in one step, when it is still the intent `key`:
	 * `change` returns the new record, `null` to delete it, or undefined to leave it as it is.
	 * Resolves to the record as it was before. Atomic across tabs when the store has `update`.
	 */
	async change(scope: string, key: string, change: (record: IntentRecord) => IntentRecord | null | undefined): Promise<IntentRecord | undefined> {
		const store = await this.#store();
		let before: IntentRecord | undefined;
		const updater = (value: unknown) => {
			const parsed = parseRecord(value);
			before = 'record' in parsed && parsed.record.key === key ? parsed.record : undefined;
			const next = before && change(before);
			return next === null ? undefined : next ?? value;
		};

		try {
			if (store.update) {
				await store.update(INTENT + scope, updater);
			} else {
				const value = await store.get(INTENT + scope);
				const next = updater(value);
				if (next === undefined) await store.delete(INTENT + scope);
				else if (next !== value) await store.set(INTENT + scope, next);
			}
		} catch (error) {
			throw toStoreError(error, `update the intent for "${scope}"`);
		}

		return before;
	}

	async remove(scope: string): Promise<void> {
		const store = await this.#store();
		try {
			await store.delete(INTENT + scope);
		} catch (error) {
			throw toStoreError(error, `delete the intent for "${scope}"`);
		}
	}

	async clear(): Promise<void> {
		const store = await this.#store();
		try {
			if (store.clear) {
				await store.clear();
				return;
			}

			for (const [id] of await store.list()) await store.delete(id);
		} catch (error) {
			throw toStoreError(error, 'clear the store');
		}
	}

	async #check(store: IntentStore, id: string, value: unknown): Promise<IntentRecord | undefined> {
		const parsed = parseRecord(value);
		let problem: string;
		if ('problem' in parsed) problem = parsed.problem;
		else if (!id.startsWith(INTENT)) problem = 'not an id sendonce writes';
		else if (INTENT + parsed.record.scope !== id) problem = `scope "${parsed.record.scope}" stored under another scope's id`;
		else return parsed.record;

		const scope = id.startsWith(INTENT) ? id.slice(INTENT.length) : undefined;
		const error = new StoreError('STORE_CORRUPT', `Set aside the invalid record "${id}" (${problem}); it will not be sent`);
		try {
			const aside: SetAsideRecord = {setAside: true, at: Date.now(), problem, value};
			await store.set(SET_ASIDE + id, aside);
			await store.delete(id);
		} catch (cause) {
			this.#emit({type: 'store-error', scope, error: toStoreError(cause, `set aside the invalid record "${id}"`)});
		}

		this.#emit({type: 'store-error', scope, error});
		return undefined;
	}
}
