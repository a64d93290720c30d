import type {CheckResult, Claim, ClaimResult, KeyCheck, KeyStore, StoredAnswer} from './key-store.js';
import {optionsObject, refuseUnknown} from './unknown-options.js';

interface Entry {
	/** Closed by a check that proved no claim was made: every request with the key is refused. */
	closed?: true;
	fingerprint: string;
	fence: number;
	/** While a handler holds the key: when its lease ends. */
	leaseUntil?: number;
	answer?: StoredAnswer;
	/** When the entry may be forgotten: the claim's or the answer's `ttl`. */
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
const KNOWN = new Set(['now']);

/**
 * Keys in this process's memory: for development, tests and single-process servers. Keys are
 * lost on restart and not shared between processes; use `redisKeyStore` or `postgresKeyStore`
 * behind a load balancer. Time is `Date.now()` unless `now` says otherwise, so fake timers drive
 * its leases and TTLs; fences are that clock in microseconds, or the key's last fence plus one.
 *
 * @example
 * import {idempotency, memoryKeyStore} from 'sendonce/server';
 *
 * const once = idempotency({store: memoryKeyStore()});
 */
export function memoryKeyStore(options: {
	/**
	 * The time in epoch milliseconds, for a clock of the server's own (a test that moves the
	 * clients' clock and not the server's).
	 * @default () => Date.now()
	 */
	now?: () => number;
} = {}): MemoryKeyStore {
	refuseUnknown(optionsObject(options), KNOWN);
	const clock = options.now ?? (() => Date.now());
	if (typeof clock !== 'function') throw new TypeError(`Expected \`now\` to be a function, got ${typeof clock}`);
	const entries = new Map<string, Entry>();
	// Every claim since this store was made is remembered (for its ttl): a restart moves this on.
	let since = clock();
	// The shortest time a claim or an answer was kept for since then: a check proves nothing past it
	// (a ttl raised since a key was answered would otherwise outlast the answer's own).
	let kept = Number.POSITIVE_INFINITY;
	let sweptAt = since;

	const sweep = (now: number) => {
		if (now - sweptAt < SWEEP_EVERY) return;
		sweptAt = now;
		for (const [id, entry] of entries) if (entry.expiresAt <= now) entries.delete(id);
	};

	/** The entry while `fence` is its running claim. */
	const running = (id: string, fence: number) => {
		const entry = entries.get(id);
		return entry?.fence === fence && entry.leaseUntil !== undefined && entry.answer === undefined ? entry : undefined;
	};

	return {
		get size() {
			return entries.size;
		},
		clear() {
			entries.clear();
			// Every claim before now is forgotten: a check proves nothing of a key made before.
			since = clock();
			kept = Number.POSITIVE_INFINITY;
		},
		async claim(id: string, {fingerprint, lease, ttl}: Claim): Promise<ClaimResult> {
			const now = clock();
			kept = Math.min(kept, ttl);
			sweep(now);
			const found = entries.get(id);
			if (found?.closed && found.expiresAt > now) return {state: 'closed'};
			if (found?.answer && found.expiresAt > now) return {state: 'done', fingerprint: found.fingerprint, answer: found.answer};
			if (found?.leaseUntil !== undefined && found.leaseUntil > now) return {state: 'running', fingerprint: found.fingerprint, leaseLeft: found.leaseUntil - now};

			const fence = Math.max(found?.closed ? 0 : (found?.fence ?? 0) + 1, now * 1000);
			entries.set(id, {fingerprint, fence, leaseUntil: now + lease, expiresAt: now + ttl});
			// A claim whose lease ran out before it answered: its handler may have done its work.
			return found?.leaseUntil === undefined ? {state: 'claimed', fence} : {state: 'claimed', fence, supersedes: found.fence};
		},
		async renew(id, {fence, lease, ttl}) {
			const entry = running(id, fence);
			if (!entry) return false;
			const now = clock();
			entry.leaseUntil = now + lease;
			entry.expiresAt = Math.max(entry.expiresAt, now + ttl);
			return true;
		},
		async complete(id, {fence, fingerprint, answer, ttl}) {
			if (!running(id, fence)) return false;
			kept = Math.min(kept, ttl);
			entries.set(id, {fingerprint, fence, answer, expiresAt: clock() + ttl});
			return true;
		},
		async release(id, {fence}) {
			const entry = running(id, fence);
			// Kept, free, until it expires: the key's next claim gets a larger fence, and a check hears it ran.
			if (entry) delete entry.leaseUntil;
		},
		async check(id: string, {from, ttl}: KeyCheck): Promise<CheckResult> {
			const now = clock();
			const found = entries.get(id);
			if (found && found.expiresAt > now) {
				if (found.closed) return {state: 'closed'};
				if (found.answer) return {state: 'done', fingerprint: found.fingerprint, answer: found.answer};
				if (found.leaseUntil !== undefined && found.leaseUntil > now) return {state: 'running', leaseLeft: found.leaseUntil - now};
				// Released, or its lease ran out before it answered: its handler may have done its work.
				return {state: 'released'};
			}

			// Nothing remembered: proof only for a key made since this store remembers every claim, not
			// in its future, and within the shortest time anything was kept.
			if (from < since || from > now || now - from >= Math.min(ttl, kept)) return {state: 'unknown'};
			entries.set(id, {closed: true, fingerprint: '', fence: 0, expiresAt: now + ttl});
			return {state: 'closed'};
		},
	};
}
