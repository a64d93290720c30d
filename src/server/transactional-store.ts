import type {CheckResult, KeyCheck, StoredAnswer} from './key-store.js';

/**
 * What a claim inside a transaction found: the key's row is now ours (`claimed`), another
 * transaction still holds it after the store's bounded wait (`running`), or its answer is
 * committed (`done`).
 *
 * @example
 * import type {TransactionalClaimResult} from 'sendonce/server';
 *
 * const isMine = (result: TransactionalClaimResult) => result.state === 'claimed';
 */
export type TransactionalClaimResult =
	| {state: 'claimed'}
	| {state: 'running'; leaseLeft?: undefined; fingerprint?: undefined}
	| {state: 'done'; fingerprint: string; answer: StoredAnswer}
	| {state: 'closed'};

/**
 * The key a transaction claims first: its id within its scope, the request's fingerprint, and
 * how long its row is kept (`ttl`, ms).
 *
 * @example
 * import type {TransactionalClaim} from 'sendonce/server';
 *
 * const claim: TransactionalClaim = {id: 'order-key', fingerprint: 'e3b0c442…', ttl: 86_400_000};
 */
export interface TransactionalClaim {
	id: string;
	fingerprint: string;
	ttl: number;
}

/**
 * A store that claims keys inside the handler's own database transaction: the key's row, the
 * handler's writes and the answer commit together or not at all, so a crash, a throw or a 5xx
 * leaves neither, and a duplicate waits for the row instead of for a lease. `idempotency()`
 * hands the handler the transaction as `ctx.tx`. `postgresTransactional(pool)` (node-postgres)
 * and `kyselyTransactional(db)` (Kysely) are the two that ship.
 *
 * @example
 * import {idempotency} from 'sendonce/server';
 * import {postgresTransactional} from 'sendonce/server/postgres';
 * import pg from 'pg';
 *
 * const once = idempotency({store: postgresTransactional(new pg.Pool())});
 */
export interface TransactionalKeyStore<Tx> {
	readonly mode: 'transactional';
	/** How long, in ms, a duplicate waits for the transaction that holds its key: an answer is kept at least this long (`ttl` is checked against it). */
	readonly wait?: number;
	/**
	 * Runs `work` in a transaction that begins by claiming `claim` when there is one (the key's row
	 * inserted, or, after waiting for the transaction that holds it, what holds it read), and hands
	 * `work` what the claim found. Commits when `work` resolves with `commit: true`; rolls back when
	 * it resolves otherwise or rejects.
	 */
	transaction<T>(claim: TransactionalClaim | undefined, work: (tx: Tx, found: TransactionalClaimResult | undefined) => Promise<{commit: boolean; value: T}>): Promise<T>;
	/** Writes the answer into the claimed key's row, in `tx`, to commit with the handler's work, kept `ttl` ms from now. */
	complete(tx: Tx, id: string, completion: {answer: StoredAnswer; ttl: number}): Promise<void>;
	/**
	 * Optional: what the store knows of the key, closing it where no claim of it was ever
	 * committed and none is in flight (see `KeyStore.check`). Never `released`: a claim that
	 * rolled back left no effect in this database.
	 */
	check?(id: string, check: KeyCheck): Promise<CheckResult>;
}

/** Whether `store` claims keys inside transactions. */
export function isTransactional(store: unknown): store is TransactionalKeyStore<unknown> {
	return (store as {mode?: unknown} | null)?.mode === 'transactional';
}
