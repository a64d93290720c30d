import type {CheckResult, KeyCheck, StoredAnswer} from './key-store.js';
import {after, bytea, CHECK_LOCK_MS, checkFound, checkSql, CLOSED, commonOptions, explainOldTable, FREE, MICROS, sweeper, tableMaker, type CheckRow, type CleanupOptions, type Sql} from './postgres-table.js';
import type {TransactionalClaim, TransactionalClaimResult, TransactionalKeyStore} from './transactional-store.js';

/**
 * Options of the transactional PostgreSQL stores (`postgresTransactional`, `kyselyTransactional`).
 *
 * @example
 * import type {TransactionalStoreOptions} from 'sendonce/server/postgres';
 *
 * const options: TransactionalStoreOptions = {table: 'billing.idempotency_keys', wait: 5000};
 */
export interface TransactionalStoreOptions extends CleanupOptions {
	/** The table, optionally schema-qualified (`schema.table`). @default 'sendonce_idempotency_keys' */
	table?: string;
	/** Create the table (and its index) on first use when it does not exist. @default true */
	createTable?: boolean;
	/** How long a duplicate waits, in ms, for the transaction that holds its key to end before it is answered 409 (then it replays the committed answer, or runs when that one rolled back). It asks again every 10 to 100 ms, holding no connection in between. @default 2000 */
	wait?: number;
}

/** A statement and its values. */
export interface Statement {
	text: string;
	values: unknown[];
}

/** A statement's rows, and how many rows it changed. */
export interface SqlResult {
	rows: unknown[];
	count: number;
}

/** What a transactional store needs of a driver: transactions, and one statement in one (or outside any: `undefined`). */
export interface SqlDriver<Tx> {
	/**
	 * `BEGIN`, then `first` (in the same round trip where the driver can), then `work` with
	 * `first`'s result; then `COMMIT` when `work` says so, `ROLLBACK` when it does not or rejects.
	 * With `idle`, the transaction wrote nothing and holds no lock: the value need not wait for
	 * its `ROLLBACK` (the connection is given back once it ends), where the driver can.
	 */
	transaction<T>(first: Statement | undefined, work: (tx: Tx, first: SqlResult | undefined) => Promise<{commit: boolean; value: T; idle?: boolean}>): Promise<T>;
	query(tx: Tx | undefined, text: string, values: unknown[]): Promise<SqlResult>;
}

interface ClaimRow {
	free: boolean;
	claimed: boolean;
	fingerprint: string | null;
	status: number | null;
	headers: Array<[string, string]> | null;
	body: Uint8Array | null;
	live: boolean | null;
	leased: boolean | null;
}

/** What a claim found besides what `TransactionalClaimResult` says: another transaction (or a lease) holds the key now. */
type Found = TransactionalClaimResult | {state: 'busy'};

/** PostgreSQL's error for a lock not taken within `lock_timeout`. */
const LOCK_NOT_AVAILABLE = '55P03';

const sleep = async (ms: number) => new Promise(resolve => setTimeout(resolve, ms));

/**
 * A transactional key store over any driver that runs SQL in PostgreSQL transactions. The key's
 * row is inserted in the handler's transaction, behind a transaction-scoped advisory lock on the
 * key. A committed answer is read without the lock. A duplicate that finds the lock taken (or a
 * live lease on the row) rolls back, gives its connection back, and asks again a little later,
 * until the key is free, answered, or `wait` has passed since it arrived (then 409): a duplicate
 * never holds a connection while it waits. A crash ends the transaction with the connection, so
 * the key is free as soon as PostgreSQL sees it close. A check runs in a short transaction of its
 * own: its insert of a closed row waits (up to `wait`) for a claim in flight, and a claim that
 * meets a closed row is answered `closed` and runs nothing.
 */
export function sqlTransactional<Tx>(driver: SqlDriver<Tx>, options: TransactionalStoreOptions = {}): TransactionalKeyStore<Tx> {
	const {table, name, createTable, interval, batch} = commonOptions(options, ['wait']);
	const wait = options.wait ?? 2000;
	if (typeof wait !== 'number' || !Number.isInteger(wait) || wait < 1) throw new TypeError(`Expected \`wait\` to be a positive integer, got ${JSON.stringify(wait)}`);

	const outside: Sql = async (text, values) => driver.query(undefined, text, values);
	const prepare = tableMaker(outside, table, createTable);
	const sweep = sweeper(outside, name, {interval, batch});
	// One 64-bit number per table and key: two keys share a lock (and wait on each other) about once in 2^32 pairs of keys in flight at once.
	const lock = `hashtextextended('${table} ' || $1, 0)`;
	// A committed answer is read without the lock, so that replays never queue behind each other.
	const claimSql = `WITH answered AS (SELECT 1 FROM ${name} WHERE id = $1 AND status IS NOT NULL AND expires_at > now()),
gate AS (SELECT pg_try_advisory_xact_lock(${lock}) AS free WHERE NOT EXISTS (SELECT 1 FROM answered)),
claim AS (
	INSERT INTO ${name} (id, fingerprint, fence, expires_at)
	SELECT $1, $2, ${MICROS}, ${after(3)} FROM gate WHERE free
	ON CONFLICT (id) DO NOTHING
	RETURNING 1
)
SELECT coalesce((SELECT free FROM gate), true) AS free, EXISTS (SELECT 1 FROM claim) AS claimed, k.fingerprint, k.status, k.headers, k.body,
	k.status IS NOT NULL AND k.expires_at > now() AS live, k.status IS NULL AND k.lease_until > now() AS leased
FROM (SELECT 1) AS one LEFT JOIN ${name} k ON k.id = $1`;
	// A free row (an answer past its ttl, a released or abandoned lease) is taken over in this transaction, which holds the key's lock.
	const takeoverSql = `UPDATE ${name} SET fingerprint = $2, fence = GREATEST(fence + 1, ${MICROS}), lease_until = NULL, status = NULL, headers = NULL, body = NULL, expires_at = ${after(3)}
WHERE id = $1 AND (${FREE})`;
	// A check: its insert of a closed row waits for a claim inserting the key in a transaction not yet
	// ended, then gives way to it when it committed (and reads it), or closes the key when it rolled back.
	const check = checkSql(name);
	// An answer is kept `ttl` from when it was given, not from the claim (now() is the transaction's start).
	const completeSql = `UPDATE ${name} SET status = $2, headers = $3, body = $4, expires_at = clock_timestamp() + $5 * interval '1 millisecond' WHERE id = $1`;

	/** The claim, from the result of its first statement (sent with `BEGIN`), asking again when a row committed after its snapshot. */
	const claim = async (tx: Tx, {id, fingerprint, ttl}: TransactionalClaim, first: SqlResult): Promise<Found> => {
		let result = first;
		for (let attempt = 0; attempt < 6; attempt++) {
			if (attempt > 0) result = await driver.query(tx, claimSql, [id, fingerprint, ttl]);
			const row = result.rows[0] as ClaimRow;
			if (row.claimed) {
				sweep();
				return {state: 'claimed'};
			}

			if (!row.free || row.leased) return {state: 'busy'};
			// Closed by a check that found no claim of it: nothing runs.
			if (row.live && row.status === CLOSED) return {state: 'closed'};
			if (row.live) {
				return {state: 'done', fingerprint: row.fingerprint!, answer: {status: row.status!, headers: row.headers ?? [], body: row.body ?? new Uint8Array(0)}};
			}

			if (row.fingerprint !== null && (await driver.query(tx, takeoverSql, [id, fingerprint, ttl])).count === 1) {
				sweep();
				return {state: 'claimed'};
			}

			// A row committed after this statement's snapshot (or deleted since): ask again.
		}

		throw new Error(`sendonce/server/postgres: could not claim or read key ${JSON.stringify(id)} after 6 tries`);
	};

	return {
		mode: 'transactional',
		wait,
		async transaction(key, work) {
			await prepare();
			const deadline = performance.now() + wait;
			const first = key && {text: claimSql, values: [key.id, key.fingerprint, key.ttl]};
			for (let round = 0; ; round++) {
				let begun = false;
				let busy = false;
				try {
					const value = await driver.transaction(first, async (tx, opened) => {
						begun = true;
						const found = key ? await claim(tx, key, opened!) : undefined;
						if (found?.state === 'done' || found?.state === 'closed') {
							// A committed answer (or a closed key), read without the key's lock: a replay waits for one round trip.
							const outcome = await work(tx, found);
							return {...outcome, idle: !outcome.commit};
						}

						if (found?.state !== 'busy') return work(tx, found);
						// Past the wait, the duplicate is answered 409; before it, it asks again in a new transaction.
						if (performance.now() >= deadline) return work(tx, {state: 'running'});
						busy = true;
						return {commit: false, value: undefined as never};
					});
					if (!busy) return value;
				} catch (error) {
					// Only the claim, sent with BEGIN, can meet a table of an earlier sendonce.
					if (!begun) explainOldTable(error, table);
					throw error;
				}

				await sleep(Math.min(10 * 2 ** round, 100, Math.max(0, deadline - performance.now())));
			}
		},
		async complete(tx, id, {answer, ttl}: {answer: StoredAnswer; ttl: number}) {
			await driver.query(tx, completeSql, [id, answer.status, JSON.stringify(answer.headers), bytea(answer.body), ttl]);
		},
		async check(id, {from, ttl}: KeyCheck): Promise<CheckResult> {
			await prepare();
			const deadline = performance.now() + wait;
			for (let round = 0; ; round++) {
				try {
					// A short transaction whose insert waits a moment at most for a claim in flight: then it
					// gives its connection back and asks again, as a duplicate does, until `wait` has passed.
					return await driver.transaction({text: 'SELECT set_config(\'lock_timeout\', $1, true)', values: [`${CHECK_LOCK_MS}ms`]}, async tx => {
						for (let attempt = 0; attempt < 6; attempt++) {
							const row = (await driver.query(tx, check, [id, from, ttl])).rows[0] as CheckRow | undefined;
							if (row) return {commit: true, value: checkFound(row, {released: false})};
							// A claim committed while the check's insert waited for it: read it.
						}

						throw new Error(`sendonce/server/postgres: could not check key ${JSON.stringify(id)} after 6 tries`);
					});
				} catch (error) {
					if ((error as {code?: unknown} | null)?.code !== LOCK_NOT_AVAILABLE) return explainOldTable(error, table);
					// A transaction still holds the key past `wait`: its claim is in flight.
					if (performance.now() >= deadline) return {state: 'running'};
				}

				await sleep(Math.min(10 * 2 ** round, 100, Math.max(0, deadline - performance.now())));
			}
		},
	};
}
