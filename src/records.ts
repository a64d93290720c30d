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
	 * Reads the record for `scope` and replaces it in one step: one IndexedDB readwrite
	 * transaction, atomic across tabs, where the store has `update`. `change` gets the valid
	 * stored record (undefined when there is none) and returns the new record, `null` to delete
	 * it, or undefined to leave the store as it is. Resolves to what `change` was given. An
	 * invalid record is first set aside and reported, as `read` does.
	 */
	async update(scope: string, change: (stored: IntentRecord | undefined) => IntentRecord | null | undefined): Promise<IntentRecord | undefined> {
		const store = await this.#store();
		const id = INTENT + scope;
		let given: IntentRecord | undefined;
		let invalid = false;
		let thrown: {error: unknown} | undefined;
		const updater = (value: unknown) => {
			given = value === undefined || value === null ? undefined : this.#valid(id, value);
			invalid = value !== undefined && value !== null && !given;
			let next: IntentRecord | null | undefined;
			try {
				next = invalid ? undefined : change(given);
			} catch (error) {
				// `change`'s own error (a key that could not be made) is not the store's.
				thrown = {error};
			}

			return next === null ? undefined : next ?? value;
		};

		try {
			if (store.update) {
				await store.update(id, updater);
			} else {
				const value = await store.get(id);
				const next = updater(value);
				if (next === undefined) await store.delete(id);
				else if (next !== value) await store.set(id, next);
			}
		} catch (error) {
			throw toStoreError(error, `update the intent for "${scope}"`);
		}

		if (thrown) throw thrown.error;
		if (!invalid) return given;
		await this.read(scope);
		return this.update(scope, change);
	}

	/** `update`, when the stored record is still the intent `key`; resolves to it, if it was. */
	async change(scope: string, key: string, change: (record: IntentRecord) => IntentRecord | null | undefined): Promise<IntentRecord | undefined> {
		const stored = await this.update(scope, record => (record?.key === key ? change(record) : undefined));
		return stored?.key === key ? stored : undefined;
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

	/** The record stored under `id`, or why it is not one. */
	#validate(id: string, value: unknown): {record: IntentRecord} | {problem: string} {
		const parsed = parseRecord(value);
		if ('problem' in parsed) return parsed;
		if (!id.startsWith(INTENT)) return {problem: 'not an id sendonce writes'};
		if (INTENT + parsed.record.scope !== id) return {problem: `scope "${parsed.record.scope}" stored under another scope's id`};
		return parsed;
	}

	#valid(id: string, value: unknown): IntentRecord | undefined {
		const checked = this.#validate(id, value);
		return 'record' in checked ? checked.record : undefined;
	}

	async #check(store: IntentStore, id: string, value: unknown): Promise<IntentRecord | undefined> {
		const checked = this.#validate(id, value);
		if ('record' in checked) return checked.record;
		const {problem} = checked;

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
