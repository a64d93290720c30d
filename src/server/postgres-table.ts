// The table both PostgreSQL stores keep keys in, its SQL, and the cleanup that keeps it small.
import type {CheckResult} from './key-store.js';
import {optionsObject, refuseUnknown} from './unknown-options.js';

/** One statement, run on a pool or a transaction: its rows and how many rows it changed. */
export type Sql = (text: string, values: unknown[]) => Promise<{rows: unknown[]; count: number}>;

const IDENTIFIER = /^[A-Za-z_][\w$]{0,62}$/;

/** `table` quoted for SQL (`"schema"."table"`), or a TypeError for anything that is not a table name. */
export function quoteTable(table: unknown): string {
	const parts = typeof table === 'string' ? table.split('.') : [];
	if (parts.length === 0 || parts.length > 2 || !parts.every(part => IDENTIFIER.test(part))) {
		throw new TypeError(`Expected \`table\` to be a table name, optionally with its schema (\`schema.table\`), got ${JSON.stringify(table)}`);
	}

	return parts.map(part => `"${part}"`).join('.');
}

/** Bytes as node-postgres sends a bytea best: a Buffer where there is one. */
export function bytea(bytes: Uint8Array): Uint8Array {
	return typeof Buffer === 'function' ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) : bytes;
}

/** A row no claim holds and no live answer fills: an answer past its ttl, a released key, a lease that ran out unanswered. */
export const FREE = `(status IS NULL AND (lease_until IS NULL OR lease_until <= now())) OR (status IS NOT NULL AND expires_at <= now())`;

/** The database's clock in microseconds: a new key's first fence. */
export const MICROS = `floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint`;

/** `now()` plus the milliseconds in parameter `$n`. */
export const after = (parameter: number) => `now() + $${parameter} * interval '1 millisecond'`;

/**
 * The `status` of a closed key's row (a check found no claim of it, and none may ever run): no
 * HTTP status is 0, and every version of the stores reads a row with a status as an answer, so a
 * claim of an earlier sendonce on the same table meets an answer with an empty fingerprint, which
 * no request has (422), and runs nothing. Kept `ttl`, as an answer; swept, or taken over, after.
 */
export const CLOSED = 0;

/**
 * The row that says since when the table remembers every claim (for its ttl): its id is empty,
 * which no key's is (a key is 1 to 255 visible characters, after its scope and a space); its
 * `fence` is that moment, in microseconds of the database's clock; it never expires, so no
 * cleanup deletes it. Inserted on a store's first use of the table and by every check, unless it
 * is there: a table made anew, truncated or emptied loses it, and the next one starts from then
 * (`clock_timestamp()`, read once the statement holds its lock on the table: after any TRUNCATE
 * it waited for). A `DELETE` of some rows (not the expired ones) must delete it too, or a check
 * could close a key whose claim it deleted.
 */
export const sinceSql = (name: string) => `INSERT INTO ${name} (id, fingerprint, fence, status, expires_at)
	VALUES ('', '', ${MICROS}, ${CLOSED}, 'infinity')
	ON CONFLICT (id) DO NOTHING`;

/** What a check reads of a key: the state of its row, or what the check made of it. */
export interface CheckRow {
	state: 'closed' | 'done' | 'running' | 'released' | 'unknown';
	fingerprint: string | null;
	status: number | null;
	headers: Array<[string, string]> | null;
	body: Uint8Array | null;
	lease_left: number | null;
}

/**
 * A check of key `$1` made at `$2` (epoch ms) by a store whose ttl is `$3` ms, in one statement
 * that holds no lease: the key's row as it is, or, where there is none, a closed row (kept `$3`)
 * when the table provably remembers every claim since `$2` (its since row is no later, and `$2`
 * is less than a ttl ago: every claim's row is kept a ttl from its claim). The insert is
 * `ON CONFLICT DO NOTHING`: it waits for a claim inserting the key at that moment, even one not
 * committed yet (a transactional claim), and gives way to it; then the statement returns no row
 * (what committed after its snapshot is not in it): ask again. A row past its expiry proves
 * nothing either way: `unknown`, as no row without proof is. `released` is a claim with no
 * answer whose lease ran out or was given up. "A ttl ago" is read on the clock once the
 * statement's snapshot is taken (`clock_timestamp()`): a cleanup that deleted a claim's row
 * before that snapshot did so at least a ttl after the claim, so after `$2` plus a ttl, and the
 * check proves nothing.
 */
/**
 * How long a check's closing insert waits for a claim in flight (a transaction that inserted the
 * key's row and has not ended): set inside the statement, so that one statement is bounded too.
 */
export const CHECK_LOCK_MS = 10;

export const checkSql = (name: string) => `WITH since AS (${sinceSql(name)}),
bounded AS (SELECT set_config('lock_timeout', '${CHECK_LOCK_MS}ms', true)),
proof AS (
	SELECT 1 FROM ${name}
	WHERE EXISTS (SELECT 1 FROM bounded) AND id = '' AND fence <= $2::float8 * 1000 AND extract(epoch FROM clock_timestamp())::float8 * 1000 - $2::float8 < $3::float8
		AND NOT EXISTS (SELECT 1 FROM ${name} WHERE id = $1)
),
closing AS (
	INSERT INTO ${name} (id, fingerprint, fence, status, expires_at)
	SELECT $1, '', ${MICROS}, ${CLOSED}, clock_timestamp() + $3::float8 * interval '1 millisecond' FROM proof
	ON CONFLICT (id) DO NOTHING
	RETURNING 1
)
SELECT 'closed' AS state, NULL AS fingerprint, NULL::smallint AS status, NULL::jsonb AS headers, NULL::bytea AS body, NULL::float8 AS lease_left FROM closing
UNION ALL
SELECT CASE WHEN status = ${CLOSED} AND expires_at > now() THEN 'closed' WHEN status IS NOT NULL AND expires_at > now() THEN 'done'
		WHEN status IS NULL AND lease_until > now() THEN 'running' WHEN status IS NULL AND expires_at > now() THEN 'released' ELSE 'unknown' END,
	fingerprint, status, headers, body, extract(epoch FROM lease_until - now())::float8 * 1000
FROM ${name} WHERE id = $1
UNION ALL
SELECT 'unknown', NULL, NULL, NULL, NULL, NULL WHERE NOT EXISTS (SELECT 1 FROM proof) AND NOT EXISTS (SELECT 1 FROM ${name} WHERE id = $1)`;

/**
 * What a check found, from its row: a transactional store answers a released lease (on a table
 * it shares with the lease store) `unknown`, as it never answers `released`.
 */
export function checkFound(row: CheckRow, {released}: {released: boolean}): CheckResult {
	switch (row.state) {
		case 'done': {
			return {state: 'done', fingerprint: row.fingerprint!, answer: {status: row.status!, headers: row.headers ?? [], body: row.body ?? new Uint8Array(0)}};
		}

		case 'running': {
			return {state: 'running', leaseLeft: Math.max(0, Math.ceil(row.lease_left ?? 0))};
		}

		case 'released': {
			return released ? {state: 'released'} : {state: 'unknown'};
		}

		default: {
			return {state: row.state};
		}
	}
}

/**
 * The format rows are written in (the `format` column): 2 for a lease-mode claim that carries its
 * token (`claim`); NULL for rows in the first format (transactional mode's, and an earlier
 * sendonce's), which read the same.
 */
export const FORMAT = 2;

/** The columns format 2 adds: nullable, so that adding them keeps every row. */
const ADD_COLUMNS = 'ADD COLUMN IF NOT EXISTS claim text, ADD COLUMN IF NOT EXISTS format smallint';

/** The table and its index, as `createTable` makes them. */
function createSql(table: string): string {
	const name = quoteTable(table);
	const index = `"${table.split('.').at(-1)!}_expires_at"`;
	return `CREATE TABLE IF NOT EXISTS ${name} (
	id text PRIMARY KEY,
	fingerprint text NOT NULL,
	fence bigint NOT NULL,
	lease_until timestamptz,
	status smallint,
	headers jsonb,
	body bytea,
	expires_at timestamptz NOT NULL,
	claim text,
	format smallint
);
CREATE INDEX IF NOT EXISTS ${index} ON ${name} (expires_at);`;
}

/**
 * The SQL that creates the stores' table and its index, and brings a table of an earlier sendonce
 * up to this one's columns (added, nullable: every row kept, and instances of either version keep
 * working on it), for a migration (docs/server.md shows it for the default table). Its `ALTER
 * TABLE` waits for every transaction open on the table, and every statement on the table waits
 * behind it: run it when the table is quiet. Until it has run, a store works on the table in the
 * first format.
 *
 * @example
 * import {tableSql} from 'sendonce/server/postgres';
 *
 * console.log(tableSql('billing.idempotency_keys'));
 */
export function tableSql(table = 'sendonce_idempotency_keys'): string {
	const [create, index] = createSql(table).split('\n);\n');
	return `${create}\n);\nALTER TABLE ${quoteTable(table)} ${ADD_COLUMNS};\n${index}`;
}

/** Postgres's errors for a table (its row type, its index) created by another process at the same moment. */
const CREATED_CONCURRENTLY = new Set(['23505', '42P07', '42710']);

/** The table's index, named as `tableSql` names it, in the table's schema. */
function indexName(table: string): string {
	const parts = table.split('.');
	return [...parts.slice(0, -1), `${parts.at(-1)!}_expires_at`].map(part => `"${part}"`).join('.');
}

/**
 * Creates the table once, on first use (unless `create` is false); a failure is forgotten, so the
 * next request tries again. A table that is there already is only looked up: `CREATE INDEX IF
 * NOT EXISTS` takes a lock on the table before it checks, and would wait behind every open
 * transaction on it (every transactional claim in flight), and every new claim behind that.
 * Processes starting together take turns: the statements run as one implicit transaction
 * behind an advisory lock on the table's name. Then, made or not, the table's since row goes in
 * where it is missing (`sinceSql`): one insert, which no claim in flight holds up (its row is
 * never a key's), with `createTable: false` too.
 */
export function tableMaker(run: Sql, table: string, create: boolean): () => Promise<void> {
	let ready: Promise<void> | undefined;
	return async () => {
		ready ??= (async () => {
			if (create) await make(run, table);
			await run(sinceSql(quoteTable(table)), []).catch((error: unknown) => explainOldTable(error, table));
		})().catch((error: unknown) => {
			ready = undefined;
			throw error;
		});
		await ready;
	};
}

/** The table and its index, made unless they are there. */
async function make(run: Sql, table: string): Promise<void> {
	const {rows} = await run('SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL AS made', [quoteTable(table), indexName(table)]);
	if ((rows[0] as {made: boolean}).made) return;
	try {
		await run(`SELECT pg_advisory_xact_lock(hashtext('sendonce table ${table}'));\n${createSql(table)}`, []);
	} catch (error) {
		if (!CREATED_CONCURRENTLY.has((error as {code?: string}).code ?? '')) throw error;
	}
}

/** A table made by a sendonce before fences (its columns differ): said plainly, instead of Postgres's "column does not exist". */
export function explainOldTable(error: unknown, table: string): never {
	if ((error as {code?: string} | null)?.code === '42703') {
		throw new Error(`sendonce/server/postgres: the table ${JSON.stringify(table)} has the columns of an earlier sendonce; drop it (its keys live a day at most) or give the store another \`table\``, {cause: error});
	}

	throw error;
}

/** The cleanup's options, checked. */
export interface CleanupOptions {
	/** Milliseconds between two cleanups from one store; 0 turns cleanup off (then schedule the documented `DELETE`). @default 60_000 */
	cleanupInterval?: number;
	/** Rows one `DELETE` removes; a cleanup repeats it until fewer are left. @default 1000 */
	cleanupBatch?: number;
}

function count(name: string, value: unknown, fallback: number, {zero = true} = {}): number {
	if (value === undefined) return fallback;
	if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || (value === 0 && !zero)) {
		throw new TypeError(`Expected \`${name}\` to be a ${zero ? 'non-negative' : 'positive'} integer, got ${JSON.stringify(value)}`);
	}

	return value;
}

/**
 * Checks a Postgres store's options: the ones every one shares, and `extra` of its own. An
 * unknown option is refused, named; `cleanupLimit`, which is gone, with what replaced it.
 */
export function commonOptions(given: object | undefined, extra: readonly string[] = []): {table: string; name: string; createTable: boolean; interval: number; batch: number} {
	const options = optionsObject(given) as {table?: unknown; createTable?: unknown; cleanupLimit?: unknown} & CleanupOptions;
	if (options.cleanupLimit !== undefined) {
		throw new TypeError('Unknown option `cleanupLimit`: cleanup now deletes every expired row, `cleanupBatch` rows at a time, every `cleanupInterval`');
	}

	refuseUnknown(options, new Set(['table', 'createTable', ...extra, 'cleanupInterval', 'cleanupBatch']));
	const table = options.table ?? 'sendonce_idempotency_keys';
	const name = quoteTable(table);
	const createTable = options.createTable ?? true;
	if (typeof createTable !== 'boolean') throw new TypeError(`Expected \`createTable\` to be a boolean, got ${JSON.stringify(createTable)}`);
	return {
		table: table as string,
		name,
		createTable,
		interval: count('cleanupInterval', options.cleanupInterval, 60_000),
		batch: count('cleanupBatch', options.cleanupBatch, 1000, {zero: false}),
	};
}

/** At most this many batches in one cleanup: a table far behind catches up over a few. */
const MAX_BATCHES = 1000;

/**
 * Deletes expired rows, off the request path: at most once per `interval` (counted from the
 * start of the last cleanup), one cleanup at a time per store, each `DELETE` taking at most
 * `batch` rows (`FOR UPDATE SKIP LOCKED`: cleanups of several processes never wait on each
 * other) and repeated until fewer than `batch` were left. So no row outlives its expiry by much
 * more than `interval`, whatever the rate of new keys. Returns the function claims call. It
 * deletes no row before its expiry, and a claim's row expires no earlier than its `ttl` after the
 * claim (a renewal or an answer only moves it later; a release leaves it), which is what lets a
 * check close a key made less than a ttl ago; the since row never expires.
 */
export function sweeper(run: Sql, name: string, {interval, batch}: {interval: number; batch: number}): () => void {
	if (interval === 0) return () => undefined;
	const sql = `DELETE FROM ${name} WHERE id IN (SELECT id FROM ${name} WHERE expires_at <= now() ORDER BY expires_at LIMIT ${batch} FOR UPDATE SKIP LOCKED)`;
	let startedAt = Number.NEGATIVE_INFINITY;
	let running = false;
	return () => {
		const now = performance.now();
		if (running || now - startedAt < interval) return;
		running = true;
		startedAt = now;
		void (async () => {
			for (let round = 0; round < MAX_BATCHES; round++) {
				const {count: deleted} = await run(sql, []);
				if (deleted < batch) break;
			}
		})().catch((error: unknown) => {
			console.error(`sendonce/server/postgres: the cleanup of ${name} failed; it runs again after cleanupInterval`, error);
		}).finally(() => {
			running = false;
		});
	};
}
