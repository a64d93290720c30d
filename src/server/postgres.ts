// `sendonce/server/postgres`: keys in a PostgreSQL table, shared by every process; in lease mode
// (`postgresKeyStore`) or inside the handler's own transaction (`postgresTransactional`).
import {randomBytes} from 'node:crypto';
import type {CheckResult, ClaimResult, KeyStore} from './key-store.js';
import {after, bytea, checkFound, checkSql, CLOSED, commonOptions, explainOldTable, FORMAT, FREE, MICROS, sweeper, tableMaker, type CheckRow, type CleanupOptions, type Sql} from './postgres-table.js';
import {sqlTransactional, type SqlResult, type TransactionalStoreOptions} from './postgres-transactional.js';
import {inlineStatement} from './sql-literal.js';
import {untilKnown} from './until-known.js';
import type {TransactionalKeyStore} from './transactional-store.js';

export {tableSql} from './postgres-table.js';
export type {TransactionalStoreOptions} from './postgres-transactional.js';

/**
 * A `pg` Pool (or Client, or anything with pg's `query(text, values)`).
 *
 * @example
 * import type {PostgresQueryable} from 'sendonce/server/postgres';
 *
 * const fake: PostgresQueryable = {query: async () => ({rows: [], rowCount: 0})};
 */
export interface PostgresQueryable {
	query(text: string, values?: unknown[]): Promise<{rows: unknown[]; rowCount?: number | null}>;
}

/**
 * @example
 * import type {PostgresKeyStoreOptions} from 'sendonce/server/postgres';
 *
 * const options: PostgresKeyStoreOptions = {table: 'billing.idempotency_keys', createTable: false};
 */
export interface PostgresKeyStoreOptions extends CleanupOptions {
	/** The table, optionally schema-qualified (`schema.table`). @default 'sendonce_idempotency_keys' */
	table?: string;
	/** Create the table (and its index) on first use when it does not exist. @default true */
	createTable?: boolean;
}

interface Row {
	state: 'claimed' | 'closed' | 'done' | 'running' | 'free';
	fence: string;
	fingerprint: string | null;
	status: number | null;
	headers: Array<[string, string]> | null;
	body: Uint8Array | null;
	lease_left: number | null;
	/** The fence a claim took over, where a claim sent again found its own token. */
	supersedes: string | null;
}

/**
 * Whether PostgreSQL answered the statement with an error of its own (a SQLSTATE code), so that
 * its fate is known; a lost connection (class 08, 57P0x, or a driver's error with no SQLSTATE)
 * leaves the statement's fate unknown.
 */
const answeredByPostgres = (error: unknown): boolean => {
	const code = (error as {code?: unknown} | null)?.code;
	return typeof code === 'string' && /^[\dA-Z]{5}$/.test(code) && !code.startsWith('08') && !code.startsWith('57P0');
};

function checkQueryable(pool: unknown, what: string): asserts pool is PostgresQueryable {
	if (typeof (pool as {query?: unknown} | null)?.query !== 'function') {
		throw new TypeError(`Expected \`pool\` to be ${what}, got ${pool === null ? 'null' : typeof pool}`);
	}
}

/**
 * Keys in a PostgreSQL table, in lease mode: a claim is one statement (`INSERT … ON CONFLICT DO
 * NOTHING`, which also reads what holds the key when it cannot take it), so two processes never
 * both run the handler; a row whose lease or ttl ran out is taken over by one more `UPDATE`, with
 * a larger fence. Time and fences come from the database's clock. The table is made on first use
 * unless `createTable: false`; expired rows are deleted off the request path, all of them once
 * per `cleanupInterval`. A check of a key is one statement too (`checkSql`): it closes a key
 * with no row only while the table provably remembers every claim since the key was made. When
 * the handler's effect is a write to the same database, prefer `postgresTransactional`: the key
 * then commits with the effect.
 *
 * @example
 * import pg from 'pg';
 * import {idempotency} from 'sendonce/server';
 * import {postgresKeyStore} from 'sendonce/server/postgres';
 *
 * const pool = new pg.Pool({connectionString: process.env.DATABASE_URL});
 * const once = idempotency({store: postgresKeyStore(pool)});
 */
export function postgresKeyStore(pool: PostgresQueryable, options: PostgresKeyStoreOptions = {}): KeyStore {
	checkQueryable(pool, 'a pg Pool or Client (an object with `query`)');
	const {table, name, createTable, interval, batch} = commonOptions(options);
	const run: Sql = async (text, values) => {
		const result = await pool.query(text, values);
		return {rows: result.rows, count: result.rowCount ?? 0};
	};

	// Every lease-mode statement is harmless sent twice (a claim finds its token, an answer its fence): one whose connection broke is sent again.
	const known: Sql = async (text, values) => untilKnown(async () => run(text, values), answeredByPostgres);
	const prepare = tableMaker(run, table, createTable);
	const sweep = sweeper(run, name, {interval, batch});
	// In format 2 every claim carries a token (`claim`): a nonce per call of `claim`, `@`, the
	// claim's fence, and `>` the fence it took over where it took one over. A claim sent again
	// because its answer was lost with the connection finds its own token and is told it holds the
	// key (and what it took over), instead of meeting a phantom holder. The fence is in the token,
	// so a token left on a row an instance of an earlier version took over (it writes none) never
	// matches. A table not yet brought up to format 2 (`tableSql`) is used in format 1, as the
	// previous release did: the same statements without the token.
	// DO NOTHING leaves a held or answered row untouched: no row lock, no WAL, no commit to
	// flush, so a replay or a 409 costs a read. The rare free row is taken over by `takeoverSql`.
	const claimSql = (format2: boolean) => `WITH next AS (SELECT ${MICROS} AS fence),
claim AS (
	INSERT INTO ${name} (id, fingerprint, fence, lease_until, expires_at${format2 ? ', claim, format' : ''})
	SELECT $1, $2, next.fence, ${after(3)}, ${after(4)}${format2 ? `, $5 || '@' || next.fence::text, ${FORMAT}` : ''} FROM next
	ON CONFLICT (id) DO NOTHING
	RETURNING fence
)
SELECT 'claimed' AS state, fence::text AS fence, NULL AS fingerprint, NULL::smallint AS status, NULL::jsonb AS headers, NULL::bytea AS body, NULL::float8 AS lease_left, NULL AS supersedes FROM claim
UNION ALL
SELECT CASE ${format2 ? "WHEN status IS NULL AND lease_until IS NOT NULL AND split_part(claim, '>', 1) = $5 || '@' || fence::text THEN 'claimed'\n\t" : ''}WHEN status IS NULL AND lease_until > now() THEN 'running'
	WHEN status = ${CLOSED} AND expires_at > now() THEN 'closed' WHEN status IS NOT NULL AND expires_at > now() THEN 'done' ELSE 'free' END,
	fence::text, fingerprint, status, headers, body, extract(epoch FROM lease_until - now()) * 1000, ${format2 ? "NULLIF(split_part(claim, '>', 2), '')" : 'NULL'}
FROM ${name} WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM claim)`;
	// Free: an answer past its ttl, a released key, or a lease that ran out unanswered (then its fence is reported).
	const takeoverSql = (format2: boolean) => `WITH old AS (
	SELECT fence, lease_until, status, GREATEST(fence + 1, ${MICROS}) AS next, status IS NULL AND lease_until IS NOT NULL AS unanswered FROM ${name}
	WHERE id = $1 AND (${FREE})
	FOR UPDATE
)
UPDATE ${name} SET fingerprint = $2, fence = old.next, lease_until = ${after(3)}, status = NULL, headers = NULL, body = NULL, expires_at = ${after(4)}${format2 ? `,
	claim = $5 || '@' || old.next::text || CASE WHEN old.unanswered THEN '>' || old.fence::text ELSE '' END, format = ${FORMAT}` : ''}
FROM old WHERE ${name}.id = $1
RETURNING ${name}.fence::text AS fence, CASE WHEN old.unanswered THEN old.fence::text END AS supersedes`;
	const formats = {2: {claim: claimSql(true), takeover: takeoverSql(true)}, 1: {claim: claimSql(false), takeover: takeoverSql(false)}} as const;
	// Format 2 until the table is found to lack its columns (asked of the catalog: an error's text is in the server's language).
	const lacksFormat2 = async () => ((await run(`SELECT count(*)::int AS found FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname IN ('claim', 'format') AND NOT attisdropped`, [name])).rows[0] as {found: number}).found < 2;
	let format: 1 | 2 = 2;
	/** One of the claim's statements, sent again while its fate is unknown; on a table in format 1, in format 1 (without the token). */
	const inFormat = async (statement: 'claim' | 'takeover', values: unknown[]) => {
		const sent = format;
		try {
			return await known(formats[sent][statement], sent === 2 ? values : values.slice(0, 4));
		} catch (error) {
			if (sent === 1 || (error as {code?: unknown} | null)?.code !== '42703' || !await lacksFormat2()) throw error;
			format = 1;
			return known(formats[1][statement], values.slice(0, 4));
		}
	};
	const check = checkSql(name);
	const running = `id = $1 AND fence = $2 AND status IS NULL AND lease_until IS NOT NULL`;
	// This claim's answer, stored: only its own `complete` writes an answer under its fence.
	const answered = `id = $1 AND fence = $2 AND status IS NOT NULL`;
	// A nonce per claim: this store's random part, then a counter.
	const base = randomBytes(6).toString('hex');
	let calls = 0;

	return {
		async claim(id, {fingerprint, lease, ttl}): Promise<ClaimResult> {
			await prepare();
			const values = [id, fingerprint, lease, ttl, `${base}${(++calls).toString(36)}`];
			for (let attempt = 0; attempt < 6; attempt++) {
				const {rows} = await inFormat('claim', values).catch((error: unknown) => explainOldTable(error, table));
				const row = rows[0] as Row | undefined;
				if (row?.state === 'claimed') {
					sweep();
					return row.supersedes === null ? {state: 'claimed', fence: Number(row.fence)} : {state: 'claimed', fence: Number(row.fence), supersedes: Number(row.supersedes)};
				}

				if (row?.state === 'closed') return {state: 'closed'};
				if (row?.state === 'done') return {state: 'done', fingerprint: row.fingerprint!, answer: {status: row.status!, headers: row.headers ?? [], body: row.body ?? new Uint8Array(0)}};
				if (row?.state === 'running') return {state: 'running', fingerprint: row.fingerprint!, leaseLeft: Math.max(0, Math.ceil(row.lease_left ?? 0))};
				if (row) {
					const taken = (await inFormat('takeover', values)).rows[0] as {fence: string; supersedes: string | null} | undefined;
					if (taken) return taken.supersedes === null ? {state: 'claimed', fence: Number(taken.fence)} : {state: 'claimed', fence: Number(taken.fence), supersedes: Number(taken.supersedes)};
				}

				// Another request's claim committed between this statement's snapshot and its insert, or took the free row first: ask again.
			}

			throw new Error(`sendonce/server/postgres: could not claim or read key ${JSON.stringify(id)} after 6 tries`);
		},
		async renew(id, {fence, lease, ttl}) {
			return (await known(`UPDATE ${name} SET lease_until = ${after(3)}, expires_at = GREATEST(expires_at, ${after(4)}) WHERE ${running}`, [id, String(fence), lease, ttl])).count === 1;
		},
		async complete(id, {fence, fingerprint, answer, ttl}) {
			// Sent again after a lost answer, it finds its own answer stored under its fence (written again, the same).
			const {count} = await known(
				`UPDATE ${name} SET fingerprint = $3, status = $4, headers = $5, body = $6, lease_until = NULL, expires_at = ${after(7)} WHERE (${running}) OR (${answered})`,
				[id, String(fence), fingerprint, answer.status, JSON.stringify(answer.headers), bytea(answer.body), ttl],
			);
			return count === 1;
		},
		async release(id, {fence}) {
			// Kept, free, until it expires: the key's next claim gets a larger fence, and a check hears it ran.
			await known(`UPDATE ${name} SET lease_until = NULL WHERE ${running}`, [id, String(fence)]);
		},
		async check(id, {from, ttl}): Promise<CheckResult> {
			await prepare();
			// Harmless sent again: a key it closed is found closed. On a table a transactional store
			// shares, its insert may meet a claim in flight: it waits a moment (CHECK_LOCK_MS), and that
			// claim is running.
			for (let attempt = 0; attempt < 6; attempt++) {
				let rows: unknown[];
				try {
					({rows} = await known(check, [id, from, ttl]));
				} catch (error) {
					if ((error as {code?: unknown} | null)?.code === '55P03') return {state: 'running'};
					return explainOldTable(error, table);
				}

				const row = rows[0] as CheckRow | undefined;
				if (row) return checkFound(row, {released: true});
				// A claim committed between this statement's snapshot and its insert: ask again.
			}

			throw new Error(`sendonce/server/postgres: could not check key ${JSON.stringify(id)} after 6 tries`);
		},
	};
}

/**
 * A pg Pool (or anything whose `connect()` hands out clients with `query` and `release`).
 *
 * @example
 * import type {PostgresPool} from 'sendonce/server/postgres';
 * import pg from 'pg';
 *
 * const pool: PostgresPool = new pg.Pool();
 */
export interface PostgresPool {
	connect(): Promise<PostgresQueryable & {release(error?: Error | boolean): void}>;
	query(text: string, values?: unknown[]): Promise<{rows: unknown[]; rowCount?: number | null}>;
}

/**
 * The client a pool hands out (`pg.PoolClient` for a `pg.Pool`): what the handler gets as `ctx.tx`.
 *
 * @example
 * import type {PoolClientOf} from 'sendonce/server/postgres';
 * import type pg from 'pg';
 *
 * type Tx = PoolClientOf<pg.Pool>; // pg.PoolClient
 */
export type PoolClientOf<Pool> = Pool extends {connect(): Promise<infer Client>; connect(callback: (...args: never[]) => void): void}
	? Client
	: Pool extends {connect(): Promise<infer Client>} ? Client : never;

const BEGIN = 'BEGIN ISOLATION LEVEL READ COMMITTED';

/**
 * The client as the handler gets it: the same client, whose `query` refuses once the transaction
 * has ended (a late write would run in whatever transaction the client is in by then, another
 * request's), and whose `release` is sendonce's to call.
 */
function guarded<Client extends object>(client: Client): {client: Client; close(): void} {
	let open = true;
	const ended = () => new Error('sendonce/server/postgres: `ctx.tx` was used after its transaction ended; do the work before the handler returns');
	const proxy = new Proxy(client, {
		get(target, property) {
			if (property === 'query') {
				return (...args: unknown[]) => {
					if (open) return (target as unknown as PostgresQueryable).query(...(args as [string, unknown[]]));
					// A submittable (pg.Query, pg-cursor, pg-query-stream) is handed back, and told.
					const submittable = args[0] as {submit?: unknown; emit?: (event: string, error: Error) => void} | undefined;
					if (typeof submittable?.submit === 'function') {
						queueMicrotask(() => submittable.emit?.('error', ended()));
						return submittable;
					}

					const callback = args.at(-1);
					if (typeof callback === 'function') {
						queueMicrotask(() => (callback as (error: Error) => void)(ended()));
						return undefined;
					}

					return Promise.reject(ended());
				};
			}

			if (property === 'release') {
				return () => {
					throw new TypeError('sendonce/server/postgres: `ctx.tx` is released by sendonce when its transaction ends; do not release it');
				};
			}

			const value = Reflect.get(target, property, target) as unknown;
			return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
		},
	});
	return {client: proxy, close() {
		open = false;
	}};
}

/**
 * Cancels whatever statement `client` is running, from a connection of its own (a pool whose
 * clients all wait would have none to lend): node-postgres's `Pool` keeps its `Client` class and
 * options, and a client knows its server process. Any other pool is left as it is.
 */
async function cancelRunning(pool: unknown, client: unknown): Promise<void> {
	const {Client, options} = pool as {Client?: new (options: unknown) => {connect(): Promise<unknown>; query(text: string, values: unknown[]): Promise<unknown>; end(): Promise<unknown>; on(event: 'error', listener: () => void): unknown}; options?: unknown};
	const pid = (client as {processID?: unknown}).processID;
	if (typeof Client !== 'function' || typeof pid !== 'number') return;
	const canceller = new Client(options);
	canceller.on('error', () => undefined);
	try {
		await canceller.connect();
		await canceller.query('SELECT pg_cancel_backend($1)', [pid]);
	} catch {
		// The ROLLBACK after it still ends the transaction, once the statement does.
	} finally {
		await canceller.end().catch(() => undefined);
	}
}

/**
 * Keys claimed inside the handler's own PostgreSQL transaction (node-postgres): the handler gets
 * the transaction's client as `ctx.tx`, and its writes, the key's row and the answer commit
 * together or not at all. A throw or a 5xx rolls everything back; a crash ends the transaction
 * with its connection, so the retry runs at once; a duplicate waits for the row (`wait`, then
 * 409) and replays the committed answer. Exactly once, with no lease to lose.
 *
 * @example
 * import pg from 'pg';
 * import {idempotency} from 'sendonce/server';
 * import {postgresTransactional} from 'sendonce/server/postgres';
 *
 * const pool = new pg.Pool({connectionString: process.env.DATABASE_URL});
 * const once = idempotency({store: postgresTransactional(pool), required: true});
 * export const POST = once(async (request, {tx}) => {
 * 	const {rows} = await tx.query('INSERT INTO orders (body) VALUES ($1) RETURNING id', [await request.text()]);
 * 	return Response.json(rows[0], {status: 201});
 * });
 */
export function postgresTransactional<Pool extends PostgresPool>(pool: Pool, options: TransactionalStoreOptions = {}): TransactionalKeyStore<PoolClientOf<Pool>> {
	checkQueryable(pool, 'a pg Pool (an object with `connect` and `query`)');
	if (typeof (pool as {connect?: unknown}).connect !== 'function') throw new TypeError('Expected `pool` to be a pg Pool (an object with `connect` and `query`), got an object without `connect`');
	type Client = PoolClientOf<Pool> & PostgresQueryable & {release(error?: Error | boolean): void};
	const result = (raw: {rows: unknown[]; rowCount?: number | null}): SqlResult => ({rows: raw.rows, count: raw.rowCount ?? 0});
	return sqlTransactional<PoolClientOf<Pool>>({
		async transaction(first, work) {
			const client = await pool.connect() as Client;
			let broken: Error | undefined;
			// A checked-out client's lost connection is an `error` event too (the pool listens only to
			// idle ones): unheard, it would crash the process. The query that was running rejects anyway.
			const onError = (error: unknown) => {
				broken = error instanceof Error ? error : new Error(String(error));
			};
			(client as {on?: (event: 'error', listener: (error: unknown) => void) => void}).on?.('error', onError);
			const tx = guarded(client);
			// A rollback the value does not wait for: the client goes back to the pool once it ends.
			let ending: Promise<unknown> | undefined;
			try {
				let opened: SqlResult | undefined;
				// READ COMMITTED, whatever the connection's default: a claim reads what committed since it began.
				// The claim rides with BEGIN: one round trip, its values written in as literals.
				const inline = first && inlineStatement(first.text, first.values);
				if (inline === undefined) {
					await client.query(BEGIN);
					if (first) opened = result(await client.query(first.text, first.values));
				} else {
					const results = await client.query(`${BEGIN};\n${inline}`) as unknown as Array<{rows: unknown[]; rowCount?: number | null}>;
					opened = result(results.at(-1)!);
				}

				let outcome: {commit: boolean; value: unknown; idle?: boolean};
				try {
					outcome = await work(tx.client, opened);
				} finally {
					tx.close();
				}

				if (!outcome.commit && outcome.idle) {
					ending = client.query('ROLLBACK').catch((rollback: unknown) => {
						broken ??= rollback instanceof Error ? rollback : new Error(String(rollback));
					});
				} else if (!outcome.commit) {
					await client.query('ROLLBACK');
				} else if ((await client.query('COMMIT') as {command?: string}).command === 'ROLLBACK') {
					// PostgreSQL answers COMMIT with ROLLBACK when a statement in the transaction failed, even one the handler caught.
					throw new Error('sendonce/server/postgres: the transaction was rolled back at COMMIT, because a statement in it had failed (the handler caught the error and answered anyway): nothing of it was kept');
				}

				return outcome.value as never;
			} catch (error) {
				// Given up after a hang-up while a statement of the handler may still run (waiting on a
				// lock): cancelled, so that the ROLLBACK queued behind it ends the transaction now.
				if ((error as {name?: unknown} | null)?.name === 'AnswerAbandonedError') await cancelRunning(pool, client);
				// A connection that cannot even roll back is not handed out again.
				await client.query('ROLLBACK').catch((rollback: unknown) => {
					broken ??= rollback instanceof Error ? rollback : new Error(String(rollback));
				});
				throw error;
			} finally {
				// A broken client keeps the listener: the pool destroys it, and it may say so again.
				const release = () => {
					if (!broken) (client as {off?: (event: 'error', listener: (error: unknown) => void) => void}).off?.('error', onError);
					client.release(broken);
				};
				if (ending) void ending.then(release);
				else release();
			}
		},
		async query(tx, text, values) {
			return result(await ((tx as Client | undefined) ?? pool).query(text, values));
		},
	}, options);
}
