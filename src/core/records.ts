import {StoreError} from './errors/store-error.js';
import {Queue} from './queue.js';
import {parseRecord, RECORD_VERSION, type IntentRecord} from './record.js';
import {isSettled} from './state.js';
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

type Change = (stored: IntentRecord | undefined) => IntentRecord | null | undefined;

/** A settled intent whose record is to be deleted, and who waits for that. */
interface Doomed {
	scope: string;
	key: string;
	resolve: () => void;
}

/** How long a deletion in a store tabs share waits for a write to go along with. */
const SETTLE_DELAY_MS = 250;

/**
 * A record written by a newer sendonce (a tab of the next version, during a rolling deploy).
 * It is never set aside, overwritten or sent from here: this page is out of date.
 */
function isNewer(value: unknown): boolean {
	const version = (value as {v?: unknown} | null)?.v;
	return typeof version === 'number' && version > RECORD_VERSION;
}

function newerError(scope: string): StoreError {
	return new StoreError('STORE_VERSION', process.env.NODE_ENV !== 'production' ? `A newer version of the app stored the intent for "${scope}": reload the page` : scope);
}

/**
 * The core's view of a store: ids per scope, every read validated, invalid and foreign
 * records moved aside and reported, every failure a `StoreError`. Changes to one scope are
 * made one at a time within this client, so that a read-decide-write is atomic here even on a
 * store without `update`; `update` makes it atomic across tabs too.
 */
export class Records {
	readonly #store: () => Promise<IntentStore>;
	readonly #emit: (event: SendOnceEvent) => void;
	readonly #queue = new Queue();
	#doomed: Doomed[] = [];
	readonly #settling = new Set<string>();
	#flushing = false;

	constructor(store: () => Promise<IntentStore>, emit: (event: SendOnceEvent) => void) {
		this.#store = store;
		this.#emit = emit;
	}

	/** Whether other tabs use this store at once (see `IntentStore.shared`). */
	async shared(): Promise<boolean> {
		return (await this.#store()).shared === true;
	}

	/** The valid record for `scope`; rejects with `STORE_VERSION` for a newer app's record. */
	async read(scope: string): Promise<IntentRecord | undefined> {
		const store = await this.#store();
		let value: unknown;
		try {
			value = await store.get(INTENT + scope);
		} catch (error) {
			throw toStoreError(error, process.env.NODE_ENV !== 'production' && `read the intent for "${scope}"`);
		}

		if (value === undefined || value === null) return undefined;
		if (isNewer(value)) throw newerError(scope);
		const checked = this.#validate(INTENT + scope, value);
		if ('record' in checked) return checked.record;
		await this.#setAside(store, INTENT + scope, value, checked.problem).catch(() => undefined);
		return undefined;
	}

	/** Every valid record in the store; a newer app's records are left alone. */
	async all(): Promise<IntentRecord[]> {
		const store = await this.#store();
		let entries: Array<[string, unknown]>;
		try {
			entries = await store.list();
		} catch (error) {
			throw toStoreError(error, process.env.NODE_ENV !== 'production' && 'list the stored intents');
		}

		const records: IntentRecord[] = [];
		for (const [id, value] of entries) {
			if (id.startsWith(SET_ASIDE) || value === undefined || value === null || isNewer(value)) continue;
			const checked = this.#validate(id, value);
			if ('record' in checked) records.push(checked.record);
			else await this.#setAside(store, id, value, checked.problem).catch(() => undefined);
		}

		return records;
	}

	/**
	 * Reads the record for `scope` and replaces it in one step: one IndexedDB readwrite
	 * transaction, atomic across tabs, where the store has `update`. `change` gets the valid
	 * stored record (undefined when there is none) and returns the new record, `null` to delete
	 * it, or undefined to leave the store as it is. Resolves to what `change` was given. An
	 * invalid record is first set aside and reported, as `read` does; one that cannot be set
	 * aside, or a newer app's record, makes this reject with `StoreError`, and nothing is written.
	 */
	async update(scope: string, change: Change, likelyNew = false): Promise<IntentRecord | undefined> {
		return this.#queue.run(scope, async () => {
			const store = await this.#store();
			// Twice at most: an invalid record is set aside, then the change is made.
			for (let tries = 0; ; tries++) {
				const outcome = await this.#updateOnce(store, scope, change, likelyNew);
				if (!('invalid' in outcome)) return outcome.given;
				if (tries > 0) throw new StoreError('STORE_CORRUPT', process.env.NODE_ENV !== 'production' ? `The intent stored for "${scope}" is invalid again after it was set aside (${outcome.invalid.problem})` : outcome.invalid.problem);
				await this.#setAside(store, INTENT + scope, outcome.invalid.value, outcome.invalid.problem);
			}
		});
	}

	/** `update`, when the stored record is still the intent `key`; resolves to it, if it was. */
	async change(scope: string, key: string, change: (record: IntentRecord) => IntentRecord | null | undefined): Promise<IntentRecord | undefined> {
		const stored = await this.update(scope, record => (record?.key === key ? change(record) : undefined));
		return stored?.key === key ? stored : undefined;
	}

	/**
	 * Moves the unsettled intents found in `other` (a store an earlier page load chose) into
	 * this store, so that they are found, and sent with their keys, whichever store this load
	 * uses. An intent already here with the same key keeps the more advanced copy. Two
	 * unsettled intents for one scope (each load saw only its own store) cannot both be the
	 * scope's: the later one is, the other is set aside and reported, never sent. A record is
	 * deleted from `other` only once it is safe here; what cannot be moved stays where it was.
	 */
	async adopt(other: IntentStore): Promise<void> {
		let entries: Array<[string, unknown]>;
		try {
			entries = await other.list();
		} catch {
			return;
		}

		for (const [id, value] of entries) {
			if (!id.startsWith(INTENT) || value === undefined || value === null || isNewer(value)) continue;
			const checked = this.#validate(id, value);
			if (!('record' in checked)) continue;
			const {record} = checked;
			try {
				if (!isSettled(record.state)) await this.#merge(record);
				if (JSON.stringify(await other.get(id)) === JSON.stringify(value)) await other.delete(id);
			} catch (error) {
				this.#emit({type: 'store-error', key: record.key, scope: record.scope, error: toStoreError(error, process.env.NODE_ENV !== 'production' && `move the intent for "${record.scope}"`)});
			}
		}
	}

	async #merge(incoming: IntentRecord): Promise<void> {
		let loser: IntentRecord | undefined;
		await this.update(incoming.scope, current => {
			loser = undefined;
			if (!current || isSettled(current.state)) return incoming;
			if (current.key === incoming.key) {
				const ahead = incoming.attempts > current.attempts || (incoming.attempts === current.attempts && incoming.updatedAt > current.updatedAt);
				return ahead ? incoming : undefined;
			}

			loser = incoming.updatedAt > current.updatedAt ? current : incoming;
			return loser === current ? incoming : undefined;
		});
		if (!loser) return;
		const store = await this.#store();
		const problem = `a later intent for "${incoming.scope}" was in the other store; it may have been sent`;
		await store.set(`${SET_ASIDE}${INTENT}${loser.scope}#${loser.key}`, {setAside: true, at: Date.now(), problem, value: loser} satisfies SetAsideRecord);
		this.#emit({type: 'store-error', key: loser.key, scope: loser.scope, error: new StoreError('STORE_CORRUPT', process.env.NODE_ENV !== 'production' ? `Set aside ${loser.key}: ${problem}` : loser.key)});
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
			throw toStoreError(error, process.env.NODE_ENV !== 'production' && 'clear the store');
		}
	}

	/**
	 * With `likelyNew`, where the store has `insert`, what `change` makes of no record is written
	 * if the scope holds none (a new intent's write-ahead, one IndexedDB round trip fewer), and
	 * `change` is asked again with the stored record otherwise (a settled record still to be
	 * deleted, a reload's). The deletions waiting to be made do not ride along: they go in their
	 * own step, soon.
	 */
	async #updateOnce(store: IntentStore, scope: string, change: Change, likelyNew = false): Promise<{given: IntentRecord | undefined} | {invalid: {value: unknown; problem: string}}> {
		const part = this.#part(scope, change);
		try {
			const created = likelyNew && store.insert ? part.updater(undefined) : undefined;
			if (created !== undefined) await store.insert!(part.id, created, part.updater);
			else if (store.update && !this.#doomed.length) await store.update(part.id, part.updater);
			else if (store.updateMany) await this.#withDoomed(store, [part], [scope]);
			else await (store.update ? store.update(part.id, part.updater) : this.#readWrite(store, part.id, part.updater));
		} catch (error) {
			throw toStoreError(error, process.env.NODE_ENV !== 'production' && `update the intent for "${scope}"`);
		}

		return part.outcome();
	}

	/**
	 * Writes `parts` in one `updateMany`, with the deletions waiting to be made (of other
	 * scopes than `scopes`): a settled record is deleted in the transaction of the next write
	 * rather than in one of its own.
	 */
	async #withDoomed(store: IntentStore, parts: Array<{id: string; updater: (old: unknown) => unknown}>, scopes: string[]): Promise<void> {
		const doomed = this.#doomed.filter(entry => !scopes.includes(entry.scope));
		this.#doomed = this.#doomed.filter(entry => !doomed.includes(entry));
		try {
			await store.updateMany!([...parts.map(part => [part.id, part.updater] as [string, (old: unknown) => unknown]), ...this.#deletions(doomed)]);
		} catch (error) {
			// Nothing of the step was written: the deletions wait for the next step, or their own.
			this.#doomed.push(...doomed);
			if (doomed.length > 0) this.#scheduleFlush(store);
			throw error;
		}

		for (const {key, resolve} of doomed) {
			this.#settling.delete(key);
			resolve();
		}
	}

	/** Calls off the deletion of `key`'s record: it stays, to be sent again. */
	keep(key: string): void {
		const kept = this.#doomed.filter(entry => entry.key === key);
		this.#doomed = this.#doomed.filter(entry => entry.key !== key);
		this.#settling.delete(key);
		for (const {resolve} of kept) resolve();
	}

	/** Whether the intent `key` settled here and its record is still to be deleted. */
	settling(key: string): boolean {
		return this.#settling.has(key);
	}

	/** The store updaters deleting each doomed record, while it is still that intent. */
	#deletions(doomed: Doomed[]): Array<[string, (old: unknown) => unknown]> {
		return doomed.map(({scope, key}) => [INTENT + scope, old => ((old as {key?: unknown} | undefined)?.key === key ? undefined : old)]);
	}

	/**
	 * Changes several scopes in one store step (one IndexedDB transaction, where the store has
	 * `updateMany`), as `update` changes one. A scope whose record is invalid or a newer app's is
	 * left as it is, and its change is not asked. Resolves to what each change was given.
	 */
	async updateMany(changes: Array<[scope: string, change: Change]>): Promise<Array<IntentRecord | undefined>> {
		const scopes = changes.map(([scope]) => scope);
		return this.#queue.run(scopes, async () => {
			const store = await this.#store();
			const parts = changes.map(([scope, change]) => this.#part(scope, change));
			try {
				if (store.updateMany) await this.#withDoomed(store, parts, scopes);
				else for (const part of parts) await (store.update ? store.update(part.id, part.updater) : this.#readWrite(store, part.id, part.updater));
			} catch (error) {
				throw toStoreError(error, process.env.NODE_ENV !== 'production' && 'update the stored intents');
			}

			return parts.map(part => {
				const outcome = part.outcome(false);
				return 'given' in outcome ? outcome.given : undefined;
			});
		});
	}

	/**
	 * Deletes the settled intent `key` of `scope` soon, together with the others settled by then,
	 * in one store step: off the path of the result to the caller. Resolves once a step that
	 * deletes it was made. Until it is gone, `settling(key)` holds: this client treats the record
	 * as settled. A step that fails is reported (a `store-error` event) and the deletion waits for
	 * the next write.
	 */
	async removeSoon(scope: string, key: string): Promise<void> {
		const store = await this.#store();
		const removed = this.#doom(scope, key);
		this.#scheduleFlush(store);
		return removed;
	}

	/**
	 * A store tabs share (IndexedDB) has each write wait for the one before it: a deletion
	 * waits a little for the next write to ride along with, else goes in a step of its own.
	 */
	#scheduleFlush(store: IntentStore): void {
		if (this.#flushing) return;
		this.#flushing = true;
		const flush = async () => {
			this.#flushing = false;
			await this.#flush();
		};

		if (store.shared && store.updateMany) setTimeout(() => void flush(), SETTLE_DELAY_MS);
		else void Promise.resolve().then(flush);
	}

	/**
	 * `removeSoon`, at once. Resolves to whether the record is gone; a step that failed was
	 * reported, and the deletion waits for the next write.
	 */
	async removeNow(scope: string, key: string): Promise<boolean> {
		const removed = this.#doom(scope, key);
		await this.#flush();
		await removed;
		return !this.#settling.has(key);
	}

	async #doom(scope: string, key: string): Promise<void> {
		this.#settling.add(key);
		return new Promise(resolve => {
			this.#doomed.push({scope, key, resolve});
		});
	}

	async #flush(): Promise<void> {
		if (this.#doomed.length === 0) return;
		const store = await this.#store();
		const doomed = this.#doomed.splice(0);
		try {
			// Without `updateMany`, each read and write is made in its scope's turn.
			await (store.updateMany
				? store.updateMany(this.#deletions(doomed))
				: this.updateMany(doomed.map(({scope, key}) => [scope, record => (record?.key === key ? null : undefined)])));
			for (const {key} of doomed) this.#settling.delete(key);
		} catch (error) {
			this.#doomed.push(...doomed);
			this.#emit({type: 'store-error', error: toStoreError(error, process.env.NODE_ENV !== 'production' && 'delete settled intents')});
		}

		for (const {resolve} of doomed) resolve();
	}

	/** A read and a write, for a store without `update`. */
	async #readWrite(store: IntentStore, id: string, updater: (old: unknown) => unknown): Promise<void> {
		const value = await store.get(id);
		const next = updater(value);
		if (next === undefined) {
			if (value !== undefined) await store.delete(id);
		} else if (next !== value) {
			await store.set(id, next);
		}
	}

	/**
	 * The store's updater for one scope's `change`, and, once it ran, what came of it: what
	 * `change` was given, or the invalid value that kept it from being asked. A newer app's
	 * record, or `change`'s own error, is thrown from `outcome()` (unless `strict` is false).
	 */
	#part(scope: string, change: Change) {
		const id = INTENT + scope;
		let given: IntentRecord | undefined;
		let invalid: {value: unknown; problem: string} | undefined;
		let newer = false;
		let thrown: {error: unknown} | undefined;
		const updater = (value: unknown) => {
			given = undefined;
			invalid = undefined;
			newer = false;
			// Asked again (an `insert` that found a record): only the last answer counts.
			thrown = undefined;
			if (value === undefined || value === null) {
				// Nothing stored.
			} else if (isNewer(value)) {
				newer = true;
				return value;
			} else {
				const checked = this.#validate(id, value);
				if ('problem' in checked) {
					invalid = {value, problem: checked.problem};
					return value;
				}

				given = checked.record;
			}

			let next: IntentRecord | null | undefined;
			try {
				next = change(given);
			} catch (error) {
				// `change`'s own error (a key that could not be made) is not the store's.
				thrown = {error};
			}

			return next === null ? undefined : next ?? value;
		};

		const outcome = (strict = true): {given: IntentRecord | undefined} | {invalid: {value: unknown; problem: string}} => {
			if (thrown) throw thrown.error;
			if (newer && strict) throw newerError(scope);
			return invalid ? {invalid} : {given};
		};

		return {id, updater, outcome};
	}

	/** The record stored under `id`, or why it is not one. */
	#validate(id: string, value: unknown): {record: IntentRecord} | {problem: string} {
		const parsed = parseRecord(value);
		if ('problem' in parsed) return parsed;
		if (!id.startsWith(INTENT)) return {problem: 'not an id sendonce writes'};
		if (INTENT + parsed.record.scope !== id) return {problem: `scope "${parsed.record.scope}" stored under another scope's id`};
		return parsed;
	}

	/**
	 * Moves an invalid value to `set-aside:<id>` and reports it. The original is deleted only
	 * while it is still that value: another tab may have written a valid record there since.
	 * Rejects with the store's error when the value could not be moved (it stays where it was).
	 */
	async #setAside(store: IntentStore, id: string, value: unknown, problem: string): Promise<void> {
		const scope = id.startsWith(INTENT) ? id.slice(INTENT.length) : undefined;
		const same = (stored: unknown) => JSON.stringify(stored) === JSON.stringify(value);
		try {
			const aside: SetAsideRecord = {setAside: true, at: Date.now(), problem, value};
			await store.set(SET_ASIDE + id, aside);
			if (store.update) await store.update(id, stored => (same(stored) ? undefined : stored));
			else if (same(await store.get(id))) await store.delete(id);
		} catch (cause) {
			const error = toStoreError(cause, process.env.NODE_ENV !== 'production' && `set aside the invalid record "${id}"`);
			this.#emit({type: 'store-error', scope, error});
			throw error;
		}

		this.#emit({type: 'store-error', scope, error: new StoreError('STORE_CORRUPT', process.env.NODE_ENV !== 'production' ? `Set aside the invalid record "${id}" (${problem}); it will not be sent` : problem)});
	}
}
