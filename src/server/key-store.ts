import type {HeaderList} from './exchange.js';

/**
 * What a key store keeps for one idempotency key: the answer the handler gave, to replay.
 *
 * @example
 * import type {StoredAnswer} from 'sendonce/server';
 *
 * const answer: StoredAnswer = {status: 201, headers: [['content-type', 'application/json']], body: new TextEncoder().encode('{"id":1}')};
 */
export interface StoredAnswer {
	status: number;
	/** The replayed headers (lower-case names; a name may repeat): never `set-cookie`. */
	headers: HeaderList;
	body: Uint8Array;
}

/**
 * What `claim` found: the key is now ours (`claimed`, with the claim's fence, and the fence of
 * an earlier claim whose lease ran out before it answered, if one did), another request holds
 * it (`running`, with the milliseconds its lease has left), or its answer is stored (`done`).
 *
 * @example
 * import type {ClaimResult} from 'sendonce/server';
 *
 * const describe = (result: ClaimResult) => (result.state === 'done' ? `replay ${result.answer.status}` : result.state);
 */
export type ClaimResult =
	| {state: 'claimed'; fence: number; supersedes?: number}
	| {state: 'running'; fingerprint: string; leaseLeft: number}
	| {state: 'done'; fingerprint: string; answer: StoredAnswer}
	| {state: 'closed'};

/**
 * What a store answers for a key it is asked about without a claim (docs/server-contract.md,
 * "Checking a key"): its answer (`done`), a claim still running (`running`), a claim made and
 * given up with no answer kept, whose effect may have happened (`released`), closed: no claim
 * of it was ever made and none ever will be (`closed`), or nothing it can prove (`unknown`).
 *
 * @example
 * import type {CheckResult} from 'sendonce/server';
 *
 * const mayHaveRun = (result: CheckResult) => result.state !== 'closed';
 */
export type CheckResult =
	| {state: 'done'; fingerprint: string; answer: StoredAnswer}
	| {state: 'running'; leaseLeft?: number | undefined}
	| {state: 'released'}
	| {state: 'closed'}
	| {state: 'unknown'};

/**
 * What a check asks of a store: close the key where no claim of it can have been made since
 * `from` (epoch ms: when the client made the key, less a margin for its clock), which the store
 * can prove only while it remembers every claim made since then: `from` is no earlier than the
 * point from which it remembers (its first use, or its last loss of data), not in the future, and
 * no more than `ttl` ms ago by its own clock (nor more than the shortest `ttl` a claim or an answer
 * was kept for since that point, where the store knows it). A closed key is kept `ttl` ms, as an
 * answer is.
 *
 * @example
 * import type {KeyCheck} from 'sendonce/server';
 *
 * const check: KeyCheck = {from: Date.now() - 600_000, ttl: 86_400_000};
 */
export interface KeyCheck {
	from: number;
	ttl: number;
}

/**
 * What a claim writes: the request's fingerprint, the lease in ms, and how long the key's record
 * is kept (`ttl`, ms) once claimed.
 *
 * @example
 * import type {Claim} from 'sendonce/server';
 *
 * const claim: Claim = {fingerprint: 'e3b0c442…', lease: 30_000, ttl: 86_400_000};
 */
export interface Claim {
	fingerprint: string;
	lease: number;
	ttl: number;
}

/**
 * Where `idempotency()` keeps keys in lease mode. Every method is one atomic step on the store
 * (one round trip for Redis and Postgres); `id` is the key within its scope. A key's record is
 * kept `ttl` ms past its last claim, renewal or answer, so a running claim's record never
 * expires before its lease, and a claim that took over an unanswered one can say so. Every claim gets a
 * **fence**: a number larger than every earlier claim's of the same key (the store's clock in
 * microseconds, or the last fence plus one), which identifies the claim: `renew`, `complete` and
 * `release` change the key only while `fence` is its latest claim and no answer is stored. Every
 * store passes the same contract test (test/server-half/store-contract.test.ts).
 *
 * @example
 * import {memoryKeyStore, type KeyStore} from 'sendonce/server';
 *
 * const store: KeyStore = memoryKeyStore();
 * const result = await store.claim('order-key', {fingerprint: 'f1', lease: 30_000, ttl: 86_400_000});
 * if (result.state === 'claimed') console.log('ours: run the handler, fenced by', result.fence);
 */
export interface KeyStore {
	/** Takes the key for `claim.lease` ms unless it is held or answered; says which. */
	claim(id: string, claim: Claim): Promise<ClaimResult>;
	/** Extends the claim's lease to `lease` ms from now, and keeps its record `ttl` ms from now; false when `fence` is no longer the key's running claim. */
	renew(id: string, renewal: {fence: number; lease: number; ttl: number}): Promise<boolean>;
	/** Stores the answer for `ttl` ms while `fence` is the key's running claim (even past its lease, when no one took over); false otherwise. */
	complete(id: string, completion: {fence: number; fingerprint: string; answer: StoredAnswer; ttl: number}): Promise<boolean>;
	/** Gives the key up (the handler failed): the next request with it runs the handler. */
	release(id: string, release: {fence: number}): Promise<void>;
	/**
	 * Optional: what the store knows of the key, in one atomic step that holds no lease, closing
	 * it where `check` lets the store prove no claim of it was ever made. A store without it
	 * answers every check `unknown`. A store with it must keep a released claim's record for its
	 * `ttl` (as all that ship do) and answer `closed` from `claim` for a closed key.
	 */
	check?(id: string, check: KeyCheck): Promise<CheckResult>;
}
