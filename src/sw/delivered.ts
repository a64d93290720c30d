import {parseRecord} from '../core/record.js';
import {reduce} from '../core/state.js';
import type {IntentStore} from '../core/types.js';

/** The longest a send waits for its notes to be written before it lets the worker stop. */
const NOTE_WAIT_MS = 5000;

/**
 * A record the service worker left for the pages: the intent it delivered, state `succeeded`.
 * The worker's own client never sees one; the first page client that reads it shows it as
 * succeeded, then deletes it.
 */
function isNote(value: unknown): value is {key: string; state: 'succeeded'; lease?: unknown} {
	return (value as {state?: unknown} | undefined)?.state === 'succeeded';
}

/** What `keepDelivered` gives: the store, and the hooks the worker drives it with. */
export interface DeliveredStore {
	store: IntentStore;
	/**
	 * The intent `key` of `scope` succeeded: its record, when deleted, is kept as a note instead
	 * (unless a page deleted it first: then there is nothing to keep).
	 */
	delivered(key: string, scope: string): void;
	/**
	 * Resolves once every note announced so far is written or its write failed, or after
	 * `NOTE_WAIT_MS` (a failed deletion waits for the store's next write).
	 */
	written(): Promise<void>;
}

/**
 * `store` as the service worker's client uses it: where the core deletes the record of an
 * intent that succeeded, a note (the record, state `succeeded`) is written in the same store
 * step, so that a page opened later shows the outcome rather than nothing. Notes are hidden
 * from the worker's reads, and never deleted by it. `store` has `updateMany` (IndexedDB's does).
 */
export function keepDelivered(store: IntentStore): DeliveredStore {
	const waiting = new Map<string, {id: string; done: () => void}>();
	const pending = new Set<Promise<void>>();
	const updateMany = async (updates: Array<[id: string, updater: (old: unknown) => unknown]>) => {
		const noted: string[] = [];
		const wrapped = updates.map(([id, updater]): [string, (old: unknown) => unknown] => [id, old => {
			const record = old as {key?: unknown; lease?: unknown} | undefined;
			// A delivery whose record is already gone (a page heard the outcome and deleted it):
			// no note to write, and nothing to wait for.
			for (const [key, entry] of waiting) if (entry.id === id && record?.key !== key) noted.push(key);
			const next = updater(isNote(old) ? undefined : old);
			if (next !== undefined) return next;
			if (isNote(old)) return old;
			if (typeof record?.key !== 'string' || !waiting.has(record.key)) return undefined;
			noted.push(record.key);
			// Read through the pages' own validation, and moved as the state machine moves it.
			const parsed = parseRecord(old);
			if (!('record' in parsed)) return undefined;
			const {lease: _, ...rest} = parsed.record;
			return reduce(rest, {type: 'observe', state: 'succeeded', attempts: rest.attempts, at: Date.now()});
		}]);
		try {
			await store.updateMany!(wrapped);
		} finally {
			for (const key of noted) waiting.get(key)?.done();
		}
	};

	return {
		store: {
			durable: store.durable,
			shared: store.shared,
			async get(id) {
				const value = await store.get(id);
				return isNote(value) ? undefined : value;
			},
			set: async (id, value) => store.set(id, value),
			delete: async id => store.delete(id),
			async list() {
				return (await store.list()).filter(([, value]) => !isNote(value));
			},
			update: async (id, updater) => updateMany([[id, updater]]),
			updateMany,
		},
		delivered(key, scope) {
			const done = new Promise<void>(resolve => {
				waiting.set(key, {
					id: `intent:${scope}`,
					done() {
						waiting.delete(key);
						resolve();
					},
				});
			});
			pending.add(done);
			void done.then(() => pending.delete(done));
		},
		async written() {
			let timer: ReturnType<typeof setTimeout> | undefined;
			await Promise.race([Promise.all(pending), new Promise(resolve => {
				timer = setTimeout(resolve, NOTE_WAIT_MS);
			})]);
			clearTimeout(timer);
		},
	};
}
