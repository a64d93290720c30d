// The check of a key in transactional mode (docs/server-contract.md, "Checking a key"), on
// node-postgres and on Kysely (0.28, and 0.27, the lowest its peer range admits): a key no
// transaction committed is closed, and every request with it is refused without running; a
// committed one is done; a transaction in flight is waited for, then read (it committed) or the
// key closed (it rolled back); and a check racing a request never finds both an effect and a
// closed key. Then the lease store and the transactional ones on one table, and on a table of
// an earlier sendonce.
import {Kysely, PostgresDialect} from 'kysely';
import {Kysely as Kysely027, PostgresDialect as PostgresDialect027} from 'kysely-0.27';
import pg from 'pg';
import {afterAll, beforeAll, describe, expect, inject, onTestFinished, test} from 'vitest';
import {idempotency, type TransactionalKeyStore} from '../../src/server.js';
import {kyselyTransactional} from '../../src/server/kysely.js';
import {postgresKeyStore, postgresTransactional} from '../../src/server/postgres.js';
import {PREVIOUS_TABLE_SQL, previousPostgresKeyStore} from '../fixtures/previous/postgres-a6f9ac2.js';
import {dropTable, openPool, uniqueName} from './stores.js';

interface Database {
	[table: string]: {key: string};
}

/** One way to write the effect inside the handler's transaction. */
interface Engine {
	name: string;
	store(pool: pg.Pool, table: string, options?: {wait?: number}): TransactionalKeyStore<any>;
	/** Inserts an effect row for `key` in the transaction. */
	insert(tx: any, effects: string, key: string): Promise<void>;
}

const engines: Engine[] = [
	{
		name: 'pg',
		store: (pool, table, options) => postgresTransactional(pool, {table, ...options}),
		async insert(tx: pg.PoolClient, effects, key) {
			await tx.query(`INSERT INTO "${effects}" (key) VALUES ($1)`, [key]);
		},
	},
	...([['Kysely 0.28', Kysely, PostgresDialect], ['Kysely 0.27', Kysely027, PostgresDialect027]] as const).map(([name, KyselyClass, Dialect]): Engine => ({
		name,
		store: (pool, table, options) => kyselyTransactional(new (KyselyClass as typeof Kysely)<Database>({dialect: new (Dialect as typeof PostgresDialect)({pool})}), {table, ...options}),
		async insert(tx, effects, key) {
			await tx.insertInto(effects).values({key}).execute();
		},
	})),
];

const TTL = 60_000;
const HOUR = 3_600_000;
const sleep = async (ms: number) => new Promise(resolve => setTimeout(resolve, ms));
const post = (key: string, headers: Record<string, string> = {}) =>
	new Request('http://api.test/orders', {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': key, ...headers}, body: '{}'});

/** A gate the handler waits at, and a promise that it has started. */
function gated() {
	let open!: () => void;
	let started!: () => void;
	const running = new Promise<void>(resolve => {
		started = resolve;
	});
	const gate = new Promise<void>(resolve => {
		open = resolve;
	});
	return {open, started, running, gate};
}

/** Whether `promise` is still pending after `ms`. */
async function pendingAfter(promise: Promise<unknown>, ms: number): Promise<boolean> {
	let settled = false;
	void promise.then(() => {
		settled = true;
	}, () => {
		settled = true;
	});
	await sleep(ms);
	return !settled;
}

/** Moves the table's since row `ms` back: as if the table had remembered every claim for that long (a test table is only made). */
async function rememberSince(pool: pg.Pool, table: string, ms: number): Promise<void> {
	await pool.query(`UPDATE "${table}" SET fence = fence - $1::bigint * 1000 WHERE id = ''`, [ms]);
}

for (const engine of engines) {
	describe.skipIf(inject('databaseUrl') === null)(`the check of a key in transactional mode on ${engine.name}`, () => {
		let pool: pg.Pool;
		let store: TransactionalKeyStore<any>;
		const table = `sendonce_test_${uniqueName()}`;
		const effects = `sendonce_effects_${uniqueName()}`;
		beforeAll(async () => {
			pool = new pg.Pool({connectionString: inject('databaseUrl')!, max: 20});
			await pool.query(`CREATE TABLE "${effects}" (id serial PRIMARY KEY, key text NOT NULL)`);
			store = engine.store(pool, table, {wait: 5000});
			// First used as it is opened: its table made, and its since row set (then moved an hour back, for checks over HTTP).
			expect(await store.check!('opened', {from: 0, ttl: 1})).toEqual({state: 'unknown'});
			await rememberSince(pool, table, HOUR);
		});
		afterAll(async () => {
			await dropTable(pool, table);
			await dropTable(pool, effects);
			await pool.end();
		});

		let serial = 0;
		const key = () => `${engine.name.replaceAll(' ', '-')}-${++serial}-${uniqueName()}`;
		const check = async (id: string, from = Date.now()) => store.check!(id, {from, ttl: TTL});
		const effectsOf = async (id: string) => (await pool.query(`SELECT count(*)::int AS n FROM "${effects}" WHERE key = $1`, [id])).rows[0].n as number;

		/** A route whose handler writes its effect in the transaction, then answers 201, or 503 (rolled back) when `fail` says so. */
		function shop(hooks: {started?: () => void; gate?: Promise<void>; fail?: boolean; ttl?: number} = {}) {
			let runs = 0;
			const handle = idempotency({store, ttl: hooks.ttl ?? TTL})(async (_request, {key: claimed, tx}) => {
				runs++;
				await engine.insert(tx, effects, claimed!);
				hooks.started?.();
				await hooks.gate;
				return hooks.fail ? new Response('try again', {status: 503}) : Response.json({run: runs}, {status: 201});
			});
			return {handle, runs: () => runs};
		}

		test('the store answers checks', () => {
			expect(typeof store.check).toBe('function');
		});

		test('a key no transaction committed is closed, stays closed, and a request with it is refused 410: its handler never runs', async () => {
			const {handle, runs} = shop();
			const id = key();
			expect(await check(id)).toEqual({state: 'closed'});
			expect(await check(id)).toEqual({state: 'closed'});
			const refused = await handle(post(id));
			expect(refused.status).toBe(410);
			expect(refused.headers.get('idempotency-status')).toBe('closed');
			expect((await handle(post(id))).status).toBe(410);
			expect(runs()).toBe(0);
			expect(await effectsOf(id)).toBe(0);
		});

		test('the transaction refuses a closed key itself: `found` says closed', async () => {
			const id = key();
			expect(await check(id)).toEqual({state: 'closed'});
			const found = await store.transaction({id, fingerprint: 'f', ttl: TTL}, async (_tx, found) => ({commit: false, value: found}));
			expect(found).toEqual({state: 'closed'});
		});

		test('a committed key is done, with its answer', async () => {
			const {handle} = shop();
			const id = key();
			expect((await handle(post(id))).status).toBe(201);
			const found = await check(id);
			expect(found).toMatchObject({state: 'done', answer: {status: 201}});
			expect(found.state === 'done' && JSON.parse(new TextDecoder().decode(found.answer.body))).toEqual({run: 1});
		});

		test('a request that rolled back left nothing: its key is closed, never released, and the retry is refused', async () => {
			const {handle, runs} = shop({fail: true});
			const id = key();
			expect((await handle(post(id))).status).toBe(503);
			expect(await check(id)).toEqual({state: 'closed'});
			expect((await handle(post(id))).status).toBe(410);
			expect(runs()).toBe(1);
			expect(await effectsOf(id)).toBe(0);
		});

		test.each([['commits', 'done'], ['rolls back', 'closed']] as const)('a check while the transaction is in flight waits for it, and when it %s says %s', async (end, state) => {
			const {open, started, running, gate} = gated();
			const {handle, runs} = shop({started, gate, fail: end === 'rolls back'});
			const id = key();
			const first = handle(post(id));
			await running;
			const checked = check(id);
			expect(await pendingAfter(checked, 150)).toBe(true);
			open();
			expect((await first).status).toBe(end === 'commits' ? 201 : 503);
			expect(await checked).toMatchObject({state});
			expect((await handle(post(id))).status).toBe(end === 'commits' ? 201 : 410);
			expect(runs()).toBe(1);
			expect(await effectsOf(id)).toBe(end === 'commits' ? 1 : 0);
		});

		test('a check waits at most the store\'s `wait` for a transaction in flight: then it is running, and closes nothing', async () => {
			const {open, started, running, gate} = gated();
			const {handle} = shop({started, gate});
			const id = key();
			const first = handle(post(id));
			await running;
			const hasty = engine.store(pool, table, {wait: 200});
			const began = performance.now();
			expect(await hasty.check!(id, {from: Date.now(), ttl: TTL})).toEqual({state: 'running'});
			expect(performance.now() - began).toBeGreaterThanOrEqual(190);
			open();
			expect((await first).status).toBe(201);
			expect(await check(id)).toMatchObject({state: 'done'});
		});

		test('a key made before the table remembers every claim, or more than a ttl ago, is unknown, and left open', async () => {
			const {handle, runs} = shop();
			const early = key();
			expect(await check(early, Date.now() - 30 * 24 * HOUR)).toEqual({state: 'unknown'});
			expect((await handle(post(early))).status).toBe(201);
			const old = key();
			expect(await check(old, Date.now() - 2 * TTL)).toEqual({state: 'unknown'});
			expect((await handle(post(old))).status).toBe(201);
			expect(runs()).toBe(2);
		});

		test('over HTTP: a check of a key never used answers closed, and the request after it is refused; a used one replays', async () => {
			// A check over HTTP takes the key as made 10 minutes before the client says: the ttl must be longer.
			const {handle, runs} = shop({ttl: 24 * HOUR});
			const id = key();
			const checked = await handle(post(id, {'idempotency-check': `created=${Date.now()}`}));
			expect(checked.status).toBe(200);
			expect(checked.headers.get('idempotency-status')).toBe('closed');
			expect(checked.headers.get('idempotency-ttl')).toBe(String(24 * HOUR / 1000));
			expect((await handle(post(id))).status).toBe(410);
			const used = key();
			await handle(post(used));
			const replayed = await handle(post(used, {'idempotency-check': `created=${Date.now()}`}));
			expect(replayed.status).toBe(201);
			expect(replayed.headers.get('idempotency-status')).toBe('done');
			expect(runs()).toBe(1);
		});

		test('a check racing a request with a fresh key: either the request ran and committed, and the check says done, or the key closed and the request was refused (100 rounds)', async () => {
			const {handle} = shop();
			const outcomes = new Map<string, number>();
			const expected = new Map<string, number>();
			for (let round = 0; round < 100; round++) {
				const id = key();
				const race = [async () => handle(post(id)), async () => check(id)] as const;
				const [answer, found] = round % 2 === 0
					? await Promise.all([race[0](), race[1]()])
					: await Promise.all([race[1](), race[0]()]).then(([b, a]) => [a, b] as const);
				const pair = `${answer.status}/${found.state}`;
				outcomes.set(pair, (outcomes.get(pair) ?? 0) + 1);
				expect(['201/done', '410/closed']).toContain(pair);
				expected.set(id, answer.status === 201 ? 1 : 0);
			}

			// Every effect belongs to a request answered 201: none to a key found closed.
			const {rows} = await pool.query(`SELECT key, count(*)::int AS n FROM "${effects}" WHERE key = ANY($1) GROUP BY key`, [[...expected.keys()]]);
			const found = new Map(rows.map(row => [row.key as string, row.n as number]));
			for (const [id, n] of expected) expect([id, found.get(id) ?? 0]).toEqual([id, n]);
			expect(outcomes.size).toBeGreaterThanOrEqual(1);
		});

		test('a truncated table forgets: a key checked before is unknown after, until keys made since', async () => {
			const own = `sendonce_test_${uniqueName()}`;
			onTestFinished(async () => dropTable(pool, own));
			const fresh = engine.store(pool, own);
			await fresh.check!('opened', {from: 0, ttl: 1});
			await rememberSince(pool, own, HOUR);
			const before = key();
			expect(await fresh.check!(before, {from: Date.now() - 1000, ttl: TTL})).toEqual({state: 'closed'});
			await pool.query(`TRUNCATE "${own}"`);
			expect(await fresh.check!(before, {from: Date.now() - 1000, ttl: TTL})).toEqual({state: 'unknown'});
			// That check set the since row again: a key made after it can be closed.
			await sleep(5);
			expect(await fresh.check!(key(), {from: Date.now(), ttl: TTL})).toEqual({state: 'closed'});
		});
	});
}

describe.skipIf(inject('databaseUrl') === null)('the lease store and a transactional one on one table', () => {
	test('a live lease is running to the transactional check, and a released one unknown (never released); the lease store says released', async () => {
		const pool = openPool();
		const table = `sendonce_test_${uniqueName()}`;
		onTestFinished(async () => {
			await dropTable(pool, table);
			await pool.end();
		});
		const lease = postgresKeyStore(pool, {table});
		const transactional = postgresTransactional(pool, {table});
		await lease.check!('opened', {from: 0, ttl: 1});
		const check = {from: Date.now(), ttl: TTL};
		const {fence} = await lease.claim('leased', {fingerprint: 'f', lease: 30_000, ttl: TTL}) as {fence: number};
		const running = await transactional.check!('leased', check);
		expect(running).toMatchObject({state: 'running'});
		expect(running.state === 'running' && running.leaseLeft).toBeGreaterThan(20_000);
		await lease.release('leased', {fence});
		expect(await transactional.check!('leased', check)).toEqual({state: 'unknown'});
		expect(await lease.check!('leased', check)).toEqual({state: 'released'});
		// A key closed by either is closed to both.
		expect(await transactional.check!('closed-by-tx', check)).toEqual({state: 'closed'});
		expect(await lease.claim('closed-by-tx', {fingerprint: 'f', lease: 30_000, ttl: TTL})).toEqual({state: 'closed'});
		expect(await lease.check!('closed-by-lease', check)).toEqual({state: 'closed'});
		expect(await transactional.transaction({id: 'closed-by-lease', fingerprint: 'f', ttl: TTL}, async (_tx, found) => ({commit: false, value: found}))).toEqual({state: 'closed'});
	});
});

describe.skipIf(inject('databaseUrl') === null)('checks on a table of the previous release (no `claim`, no `format`)', () => {
	test('both stores close keys on it; the previous release\'s claim of a closed key meets an answer no request matches, and runs nothing', async () => {
		const pool = openPool();
		const table = `sendonce_test_${uniqueName()}`;
		onTestFinished(async () => {
			await dropTable(pool, table);
			await pool.end();
		});
		await pool.query(PREVIOUS_TABLE_SQL(table));
		const lease = postgresKeyStore(pool, {table, cleanupInterval: 0});
		const transactional = postgresTransactional(pool, {table, cleanupInterval: 0});
		const previous = previousPostgresKeyStore(pool, {table});
		// The since row, on first use: before it, nothing is proved.
		expect(await lease.check!('before', {from: Date.now() - HOUR, ttl: TTL})).toEqual({state: 'unknown'});
		await sleep(5);
		const check = {from: Date.now(), ttl: TTL};
		expect(await lease.check!('by-lease', check)).toEqual({state: 'closed'});
		expect(await transactional.check!('by-tx', check)).toEqual({state: 'closed'});
		expect(await lease.claim('by-tx', {fingerprint: 'f', lease: 30_000, ttl: TTL})).toEqual({state: 'closed'});
		for (const id of ['by-lease', 'by-tx']) {
			const met = await previous.claim(id, {fingerprint: 'f', lease: 30_000, ttl: TTL});
			expect(met).toMatchObject({state: 'done', fingerprint: ''});
		}

		const {handle, runs} = (() => {
			let count = 0;
			return {handle: idempotency({store: transactional, ttl: TTL})(async () => new Response(String(++count), {status: 201})), runs: () => count};
		})();
		expect((await handle(post('by-lease'))).status).toBe(410);
		expect(runs()).toBe(0);
		// The previous release's answers and claims read as they did.
		const answered = await previous.claim('answered', {fingerprint: 'f', lease: 30_000, ttl: TTL}) as {fence: number};
		await previous.complete('answered', {fence: answered.fence, fingerprint: 'f', answer: {status: 201, headers: [], body: new Uint8Array([1])}, ttl: TTL});
		expect(await lease.check!('answered', check)).toMatchObject({state: 'done', fingerprint: 'f', answer: {status: 201}});
		expect(await transactional.check!('answered', check)).toMatchObject({state: 'done', fingerprint: 'f', answer: {status: 201}});
		const columns = await pool.query('SELECT column_name FROM information_schema.columns WHERE table_name = $1 AND column_name IN (\'claim\', \'format\')', [table]);
		expect(columns.rows).toEqual([]);
	});
});
