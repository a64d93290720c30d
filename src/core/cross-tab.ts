import {randomKey} from './key.js';
import type {Records} from './records.js';
import {isSettled} from './state.js';
import type {IntentResult, IntentState} from './types.js';
import {follow, sleep} from './wait.js';

/** How long a lease holds without renewal, where Web Locks are missing. */
export const LEASE_MS = 10_000;
const RENEW_MS = 3000;
/** How often a waiting tab looks at the store, where Web Locks are missing. */
const POLL_MS = 500;
/** After the owner lets go, how long its outcome message may still be on its way. */
const GRACE_MS = 1000;
const CHANNEL = 'sendonce';

/** The right to send one intent, held by one tab at a time. */
export interface Claim {
	/** Where Web Locks are missing: the lease to write with every record, kept fresh. */
	readonly lease?: {owner: string; until: number};
	release: () => Promise<void>;
}

interface LockManagerLike {
	request(name: string, options: {ifAvailable?: boolean; signal?: AbortSignal}, callback: (lock: unknown) => unknown): Promise<unknown>;
}

interface Message {
	type: 'outcome';
	key: string;
	result: IntentResult;
}

function lockManager(): LockManagerLike | undefined {
	const locks = (globalThis as {navigator?: {locks?: LockManagerLike}}).navigator?.locks;
	return typeof locks?.request === 'function' ? locks : undefined;
}

/**
 * Whether another tab's lease still holds. Never for longer than one lease period from now:
 * a clock set back must not stretch a crashed tab's lease.
 */
export function leaseHolds(lease: {until: number} | undefined, now: number): boolean {
	return lease !== undefined && lease.until > now && lease.until - now <= LEASE_MS;
}

/**
 * One sender per intent across tabs. A Web Lock named after the key where the browser has
 * them; otherwise, for a store that tabs share (IndexedDB), a lease in the stored record,
 * claimed in one readwrite transaction and renewed while sending, so a crashed tab's lease
 * goes stale. A tab that loses the claim
 * waits for the owner's outcome: a BroadcastChannel message where there is one, else the
 * store, polled.
 */
export class Coordinator {
	readonly #records: Records;
	#tabId: string | undefined;
	readonly #waiters = new Map<string, Set<(result: IntentResult) => void>>();
	readonly #received = new Map<string, IntentResult>();
	/** Keys this tab holds a claim on. */
	readonly #held = new Set<string>();
	#channel: BroadcastChannel | undefined | false;
	/** `navigator.locks` exists but refused us (a sandboxed iframe, blocked site data). */
	#locksDenied = false;

	constructor(records: Records) {
		this.#records = records;
	}

	/** This client's name in leases: made on first use, so creating a client needs no crypto. */
	get #tab(): string {
		this.#tabId ??= randomKey();
		return this.#tabId;
	}

	/**
	 * Claims `key` for this tab, or resolves to undefined when another tab holds it. A `fresh`
	 * key is one no record holds yet: its lease, where one is needed, is not written here but
	 * goes into the record's first write.
	 */
	async claim(key: string, scope: string, fresh = false): Promise<Claim | undefined> {
		// A lease is this tab's, whoever in the tab asks: a second claim from here (a resume()
		// while a send runs) must not take it over, and then release it under the sender.
		if (this.#held.has(key)) return undefined;
		this.#held.add(key);
		let claim: Claim | undefined;
		try {
			claim = await this.#claim(key, scope, fresh);
		} finally {
			if (!claim) this.#held.delete(key);
		}

		if (!claim) return undefined;
		const {release} = claim;
		let released = false;
		claim.release = async () => {
			if (released) return;
			released = true;
			this.#held.delete(key);
			await release();
		};
		return claim;
	}

	async #claim(key: string, scope: string, fresh: boolean): Promise<Claim | undefined> {
		this.#open();
		const locks = this.#locks();
		if (locks) {
			const claimed = await new Promise<Claim | undefined | 'denied'>(resolve => {
				let granted = false;
				const request = async () => locks.request(`sendonce:${key}`, {ifAvailable: true}, async lock => {
					granted = true;
					if (!lock) {
						resolve(undefined);
						return;
					}

					// The lock is held until the promise returned here settles.
					await new Promise<void>(release => {
						resolve({release: async () => release()});
					});
				});
				// A `SecurityError` (sandboxed iframe, blocked site data): coordinate without locks.
				request().catch(() => {
					if (!granted) resolve('denied');
				});
			});
			if (claimed !== 'denied') return claimed;
			this.#locksDenied = true;
		}

		// A store no other tab uses needs no lease: nobody else can send from it.
		return await this.#records.shared() ? this.#claimLease(key, scope, fresh) : {release: async () => undefined};
	}

	/** Whether a claim is a lease in the record (no usable Web Locks, a store tabs share). */
	async needsLease(): Promise<boolean> {
		return !this.#locks() && await this.#records.shared();
	}

	/**
	 * Waits until the tab holding `key` lets go. Resolves to its outcome when it said one,
	 * else to undefined (it crashed, its lease went stale, or the record is gone): the caller
	 * looks at the store and tries to claim again. An outcome heard before the wait counts only
	 * when settled: someone holds the key now, so an `unresolved` heard earlier ended an earlier
	 * send, and says nothing of this one.
	 */
	async waitForOwner(key: string, scope: string, signal: AbortSignal): Promise<IntentResult | undefined> {
		const known = this.#received.get(key);
		if (known && isSettled(known.status as IntentState)) return known;

		const done = new AbortController();
		const unfollow = follow(signal, done);
		const linked = done.signal;
		const message = new Promise<IntentResult>(resolve => {
			const waiters = this.#waiters.get(key) ?? new Set();
			waiters.add(resolve);
			this.#waiters.set(key, waiters);
			linked.addEventListener('abort', () => waiters.delete(resolve), {once: true});
		});
		const locks = this.#locks();
		try {
			const released = locks
				? locks.request(`sendonce:${key}`, {signal: linked}, () => undefined).catch(async () => {
					if (linked.aborted) return;
					this.#locksDenied = true;
					await this.#pollUntilFree(key, scope, linked);
				})
				: this.#pollUntilFree(key, scope, linked);
			const first = await Promise.race([message, released.then(() => undefined, () => undefined)]);
			if (first || signal.aborted) return first;
			return await Promise.race([message, sleep(GRACE_MS, linked).then(() => undefined, () => undefined)]);
		} finally {
			unfollow();
			done.abort();
		}
	}

	/**
	 * Starts hearing the outcomes other tabs announce. Call it before reading the store: an
	 * outcome announced between that read and a claim must not be missed.
	 */
	listen(): void {
		this.#open();
	}

	/** Tells the other tabs how `key` ended. */
	announce(key: string, result: IntentResult): void {
		const channel = this.#open();
		try {
			channel?.postMessage({type: 'outcome', key, result} satisfies Message);
		} catch {
			// A result that cannot be cloned (an exotic error object): send it without the error.
			channel?.postMessage({type: 'outcome', key, result: {...result, error: undefined} as IntentResult} satisfies Message);
		}
	}

	/** An outcome another tab announced for `key`, if one arrived. */
	received(key: string): IntentResult | undefined {
		return this.#received.get(key);
	}

	#locks(): LockManagerLike | undefined {
		return this.#locksDenied ? undefined : lockManager();
	}

	#open(): BroadcastChannel | undefined {
		if (this.#channel === undefined) {
			try {
				this.#channel = typeof BroadcastChannel === 'function' ? new BroadcastChannel(CHANNEL) : false;
			} catch {
				// Firefox with cookies blocked throws `SecurityError`: outcomes are then read from the store.
				this.#channel = false;
			}
			if (this.#channel) {
				// In Node (SSR, tests, scripts) an open channel would keep the process alive.
				(this.#channel as {unref?: () => void}).unref?.();
				this.#channel.addEventListener('message', (event: MessageEvent<Message>) => {
					const {data} = event;
					if (data?.type !== 'outcome' || typeof data.key !== 'string') return;
					this.#received.set(data.key, data.result);
					if (this.#received.size > 100) this.#received.delete(this.#received.keys().next().value!);
					for (const resolve of this.#waiters.get(data.key) ?? []) resolve(data.result);
					this.#waiters.delete(data.key);
				});
			}
		}

		return this.#channel || undefined;
	}

	async #claimLease(key: string, scope: string, fresh: boolean): Promise<Claim | undefined> {
		const lease = {owner: this.#tab, until: Date.now() + LEASE_MS};
		let claimed = fresh;
		if (!fresh) {
			await this.#records.change(scope, key, record => {
				const now = Date.now();
				if (record.lease?.owner !== this.#tab && leaseHolds(record.lease, now)) return undefined;
				claimed = true;
				lease.until = now + LEASE_MS;
				return {...record, lease: {...lease}};
			});
		}

		if (!claimed) return undefined;

		const renew = setInterval(() => {
			lease.until = Date.now() + LEASE_MS;
			void this.#records.change(scope, key, record => (record.lease?.owner === this.#tab
				? {...record, lease: {...lease}}
				: undefined)).catch(() => undefined);
		}, RENEW_MS);
		return {
			lease,
			release: async () => {
				clearInterval(renew);
				await this.#records.change(scope, key, record => {
					if (record.lease?.owner !== this.#tab) return undefined;
					const {lease: _, ...rest} = record;
					return rest;
				}).catch(() => undefined);
			},
		};
	}

	async #pollUntilFree(key: string, scope: string, signal: AbortSignal): Promise<void> {
		for (;;) {
			await sleep(POLL_MS, signal);
			const record = await this.#records.read(scope).catch(() => undefined);
			if (!record || record.key !== key || !leaseHolds(record.lease, Date.now())) return;
		}
	}
}
