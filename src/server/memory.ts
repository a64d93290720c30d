import type {Claim, ClaimResult, KeyStore, StoredAnswer} from './key-store.js';

interface Entry {
	fingerprint: string;
	/** The holder's token while the handler runs; undefined once answered. */
	token?: string;
	answer?: StoredAnswer;
	expiresAt: number;
}

/**
 * A key store in this process's memory.
 *
 * @example
 * import {memoryKeyStore, type MemoryKeyStore} from 'sendonce/server';
 *
 * const store: MemoryKeyStore = memoryKeyStore();
 * store.clear();
 */
export interface MemoryKeyStore extends KeyStore {
	/** Entries held, expired ones not yet swept included. */
	readonly size: number;
	/** Forgets every key (tests). */
	clear(): void;
}

/** How often, at most, a claim sweeps every expired entry out of the map. */
const SWEEP_EVERY = 60_000;

/**
 * Keys in this process's memory: for development, tests and single-process servers. Keys are
 * lost on restart and not shared between processes; use `redisKeyStore` or `postgresKeyStore`
 * behind a load balancer. Time is `Date.now()` unless `now` says otherwise, so fake timers drive
 * its leases and TTLs.
 *
 * @example
 * import {idempotency, memoryKeyStore} from 'sendonce/server';
 *
 * const once = idempotency({store: memoryKeyStore()});
 */
export function memoryKeyStore({now: clock = () => Date.now()}: {
	/**
	 * The time in epoch milliseconds, for a clock of the server's own (a test that moves the
	 * clients' clock and not the server's).
	 * @default () => Date.now()
	 */
	now?: () => number;
} = {}): MemoryKeyStore {
	const entries = new Map<string, Entry>();
	let sweptAt = clock();

	const sweep = (now: number) => {
		if (now - sweptAt < SWEEP_EVERY) return;
		sweptAt = now;
		for (const [id, entry] of entries) if (entry.expiresAt <= now) entries.delete(id);
	};

	return {
		get size() {
			return entries.size;
		},
		clear() {
			entries.clear();
		},
		async claim(id: string, {fingerprint, token, lease}: Claim): Promise<ClaimResult> {
			const now = clock();
			sweep(now);
			const entry = entries.get(id);
			if (entry && entry.expiresAt > now) {
				return entry.answer
					? {state: 'done', fingerprint: entry.fingerprint, answer: entry.answer}
					: {state: 'running', fingerprint: entry.fingerprint, leaseLeft: entry.expiresAt - now};
			}

			entries.set(id, {fingerprint, token, expiresAt: now + lease});
			return {state: 'claimed'};
		},
		async renew(id, {token, lease}) {
			const now = clock();
			const entry = entries.get(id);
			if (entry?.token !== token || entry.expiresAt <= now) return false;
			entry.expiresAt = now + lease;
			return true;
		},
		async complete(id, {token, fingerprint, answer, ttl}) {
			const now = clock();
			const entry = entries.get(id);
			// Another claim holds the key, or another answer is stored: not ours to write.
			if (entry && entry.expiresAt > now && entry.token !== token) return false;
			entries.set(id, {fingerprint, answer, expiresAt: now + ttl});
			return true;
		},
		async release(id, {token}) {
			if (entries.get(id)?.token === token) entries.delete(id);
		},
	};
}
