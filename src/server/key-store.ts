/**
 * What a key store keeps for one idempotency key: the answer the handler gave, to replay.
 *
 * @example
 * import type {StoredAnswer} from 'sendonce/server';
 *
 * const answer: StoredAnswer = {status: 201, headers: {'content-type': 'application/json'}, body: new TextEncoder().encode('{"id":1}')};
 */
export interface StoredAnswer {
	status: number;
	/** The safe headers only (lower-case names): never `set-cookie`. */
	headers: Record<string, string>;
	body: Uint8Array;
}

/**
 * What `claim` found: the key is now ours (`claimed`), another request holds it (`running`,
 * with the milliseconds its lease has left), or its answer is stored (`done`).
 *
 * @example
 * import type {ClaimResult} from 'sendonce/server';
 *
 * const describe = (result: ClaimResult) => (result.state === 'done' ? `replay ${result.answer.status}` : result.state);
 */
export type ClaimResult =
	| {state: 'claimed'}
	| {state: 'running'; fingerprint: string; leaseLeft: number}
	| {state: 'done'; fingerprint: string; answer: StoredAnswer};

/**
 * What a claim writes: the request's fingerprint, the claimant's token and the lease in ms.
 *
 * @example
 * import type {Claim} from 'sendonce/server';
 *
 * const claim: Claim = {fingerprint: 'e3b0c442…', token: crypto.randomUUID(), lease: 30_000};
 */
export interface Claim {
	fingerprint: string;
	/** Random, unique per claim: only its holder may renew, complete or release it. */
	token: string;
	lease: number;
}

/**
 * Where `idempotency()` keeps keys. Every method is one atomic step on the store (one round
 * trip for Redis and Postgres); `id` is the key within its scope. A claim, renew, complete or
 * release whose `token` no longer holds the key changes nothing. Every store passes the same
 * contract test (test/server-half/store-contract.test.ts).
 *
 * @example
 * import {memoryKeyStore, type KeyStore} from 'sendonce/server';
 *
 * const store: KeyStore = memoryKeyStore();
 * const result = await store.claim('order-key', {fingerprint: 'f1', token: crypto.randomUUID(), lease: 30_000});
 * if (result.state === 'claimed') console.log('ours: run the handler');
 */
export interface KeyStore {
	/** Takes the key for `claim.lease` ms unless it is held or answered; says which. */
	claim(id: string, claim: Claim): Promise<ClaimResult>;
	/** Extends the holder's lease to `lease` ms from now; false when `token` no longer holds the key. */
	renew(id: string, renewal: {token: string; lease: number}): Promise<boolean>;
	/**
	 * Stores the answer for `ttl` ms while `token` holds the key, or while no one does (its lease
	 * ran out unclaimed); false when another claim or answer holds it.
	 */
	complete(id: string, completion: {token: string; fingerprint: string; answer: StoredAnswer; ttl: number}): Promise<boolean>;
	/** Gives the key up (the handler failed): the next request with it runs the handler. */
	release(id: string, release: {token: string}): Promise<void>;
}
