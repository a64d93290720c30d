// `sendonce/server/postgres`: keys in a PostgreSQL table, shared by every process.
import type {ClaimResult, KeyStore} from './key-store.js';

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
export interface PostgresKeyStoreOptions {
	/** The table, optionally schema-qualified (`schema.table`). @default 'sendonce_idempotency_keys' */
	table?: string;
	/** Create the table (and its index) on first use when it does not exist. @default true */
	createTable?: boolean;
	/** Expired rows a claim deletes, at most once per `cleanupInterval`. 0 turns it off (then schedule the documented `DELETE`). @default 100 */
	cleanupLimit?: number;
	/** Milliseconds between two cleanups from one store. @default 60_000 */
	cleanupInterval?: number;
}

const IDENTIFIER = /^[A-Za-z_][\w$]{0,62}$/;

/**
 * The SQL that creates the store's table and its index, for a migration when `createTable`
 * is false (docs/server.md shows it for the default table).
 *
 * @example
 * import {tableSql} from 'sendonce/server/postgres';
 *
 * console.log(tableSql('billing.idempotency_keys'));
 */
export function tableSql(table = 'sendonce_idempotency_keys'): string {
	const name = quoteTable(table);
	const index = `"${table.split('.').at(-1)!}_expires_at"`;
	return `CREATE TABLE IF NOT EXISTS ${name} (
	id text PRIMARY KEY,
	fingerprint text NOT NULL,
	token text,
	status smallint,
	headers jsonb,
	body bytea,
	expires_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS ${index} ON ${name} (expires_at);`;
}

function quoteTable(table: unknown): string {
	const parts = typeof table === 'string' ? table.split('.') : [];
	if (parts.length === 0 || parts.length > 2 || !parts.every(part => IDENTIFIER.test(part))) {
		throw new TypeError(`Expected \`table\` to be a table name, optionally with its schema (\`schema.table\`), got ${JSON.stringify(table)}`);
	}

	return parts.map(part => `"${part}"`).join('.');
}

function count(name: string, value: unknown, fallback: number): number {
	if (value === undefined) return fallback;
	if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) throw new TypeError(`Expected \`${name}\` to be a non-negative integer, got ${JSON.stringify(value)}`);
	return value;
}

interface Row {
	claimed: boolean;
	fingerprint: string | null;
	token: string | null;
	status: number | null;
	headers: Record<string, string> | null;
	body: Buffer | null;
	lease_left: number | null;
}

/** Postgres's errors for a table created by another process at the same moment. */
const CREATED_CONCURRENTLY = new Set(['23505', '42P07']);

/**
 * Keys in a PostgreSQL table: a claim is one statement (`INSERT … ON CONFLICT DO NOTHING`,
 * which also reads what holds the key when it cannot take it), so two processes never both
 * run the handler; a row whose lease or ttl ran out is taken over by one more `UPDATE`. Time is the database's clock. The table is made
 * on first use unless `createTable: false`; expired rows are deleted by claims, a bounded
 * batch at a time (`cleanupLimit`), and by the `DELETE` in docs/server.md if you schedule it.
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
	if (typeof (pool as {query?: unknown} | null)?.query !== 'function') {
		throw new TypeError(`Expected \`pool\` to be a pg Pool or Client (an object with \`query\`), got ${pool === null ? 'null' : typeof pool}`);
	}

	const table = options.table ?? 'sendonce_idempotency_keys';
	const name = quoteTable(table);
	const createTable = options.createTable ?? true;
	if (typeof createTable !== 'boolean') throw new TypeError(`Expected \`createTable\` to be a boolean, got ${JSON.stringify(createTable)}`);
	const cleanupLimit = count('cleanupLimit', options.cleanupLimit, 100);
	const cleanupInterval = count('cleanupInterval', options.cleanupInterval, 60_000);
	const expiry = (parameter: number) => `now() + $${parameter} * interval '1 millisecond'`;

	// DO NOTHING leaves a held or answered row untouched: no row lock, no WAL, no commit to
	// flush, so a replay or a 409 costs a read. The rare expired row is taken over by `takeover`.
	const claimStatement = (cleanup: boolean) => `WITH ${cleanup ? `swept AS (
	DELETE FROM ${name} WHERE id IN (
		SELECT id FROM ${name} WHERE expires_at <= now() AND id <> $1 ORDER BY expires_at LIMIT ${cleanupLimit} FOR UPDATE SKIP LOCKED
	)
), ` : ''}claim AS (
	INSERT INTO ${name} (id, fingerprint, token, expires_at) VALUES ($1, $2, $3, ${expiry(4)})
	ON CONFLICT (id) DO NOTHING
	RETURNING id
)
SELECT true AS claimed, NULL AS fingerprint, NULL AS token, NULL::smallint AS status, NULL::jsonb AS headers, NULL::bytea AS body, NULL::float8 AS lease_left FROM claim
UNION ALL
SELECT false, fingerprint, token, status, headers, body, extract(epoch FROM expires_at - now()) * 1000
FROM ${name} WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM claim)`;
	// A claim or an answer that expired before anything deleted it: take it, unless another request just did.
	const takeover = `UPDATE ${name} SET fingerprint = $2, token = $3, status = NULL, headers = NULL, body = NULL, expires_at = ${expiry(4)}
WHERE id = $1 AND expires_at <= now()`;
	const claimSql = claimStatement(false);
	const claimAndCleanSql = claimStatement(true);
	let ready: Promise<void> | undefined;
	const prepare = async (): Promise<void> => {
		if (!createTable) return;
		ready ??= (async () => {
			try {
				await pool.query(tableSql(table));
			} catch (error) {
				if (!CREATED_CONCURRENTLY.has((error as {code?: string}).code ?? '')) throw error;
			}
		})().catch((error: unknown) => {
			// Forget the failure: the next request tries again (the database may be back).
			ready = undefined;
			throw error;
		});
		await ready;
	};

	let cleanedAt = Number.NEGATIVE_INFINITY;
	return {
		async claim(id, {fingerprint, token, lease}): Promise<ClaimResult> {
			await prepare();
			const now = Date.now();
			const cleanup = cleanupLimit > 0 && now - cleanedAt >= cleanupInterval;
			if (cleanup) cleanedAt = now;
			const values = [id, fingerprint, token, lease];
			// Another request's claim can commit between this statement's snapshot and its insert:
			// then it sees no row. Rare; ask again.
			for (let attempt = 0; ; attempt++) {
				const {rows} = await pool.query(cleanup && attempt === 0 ? claimAndCleanSql : claimSql, values);
				const row = rows[0] as Row | undefined;
				if (row?.claimed) return {state: 'claimed'};
				if (row && row.lease_left !== null && row.lease_left > 0) {
					return row.token === null
						? {state: 'done', fingerprint: row.fingerprint!, answer: {status: row.status!, headers: row.headers ?? {}, body: row.body ?? Buffer.alloc(0)}}
						: {state: 'running', fingerprint: row.fingerprint!, leaseLeft: Math.ceil(row.lease_left)};
				}

				if (row && (await pool.query(takeover, values)).rowCount === 1) return {state: 'claimed'};
				if (attempt >= 5) throw new Error(`sendonce/server/postgres: could not claim or read key ${JSON.stringify(id)} after ${attempt + 1} tries`);
			}
		},
		async renew(id, {token, lease}) {
			const {rowCount} = await pool.query(`UPDATE ${name} SET expires_at = ${expiry(3)} WHERE id = $1 AND token = $2 AND expires_at > now()`, [id, token, lease]);
			return rowCount === 1;
		},
		async complete(id, {token, fingerprint, answer, ttl}) {
			// Held by this token, or by no one (its lease ran out and no one took over).
			const {rowCount} = await pool.query(
				`INSERT INTO ${name} AS held (id, fingerprint, token, status, headers, body, expires_at) VALUES ($1, $3, NULL, $4, $5, $6, ${expiry(7)})
				ON CONFLICT (id) DO UPDATE SET fingerprint = excluded.fingerprint, token = NULL, status = excluded.status, headers = excluded.headers, body = excluded.body, expires_at = excluded.expires_at
				WHERE held.token = $2 OR held.expires_at <= now()`,
				[id, token, fingerprint, answer.status, JSON.stringify(answer.headers), Buffer.from(answer.body), ttl],
			);
			return rowCount === 1;
		},
		async release(id, {token}) {
			await pool.query(`DELETE FROM ${name} WHERE id = $1 AND token = $2`, [id, token]);
		},
	};
}
