// Transactional mode: the key's row, the handler's writes and the answer commit together, on
// node-postgres (`postgresTransactional`) and on Kysely (`kyselyTransactional`, at the lowest and
// the newest version its peer range admits that runs on Node 20).
import {Kysely, PostgresDialect} from 'kysely';
import {Kysely as Kysely027, PostgresDialect as PostgresDialect027} from 'kysely-0.27';
import pg from 'pg';
import {afterAll, beforeAll, describe, expect, inject, onTestFinished, test, vi} from 'vitest';
import {idempotency, requestFingerprint, type TransactionalKeyStore} from '../../src/server.js';
import {kyselyTransactional} from '../../src/server/kysely.js';
import {postgresKeyStore, postgresTransactional} from '../../src/server/postgres.js';
import {TcpFaultProxy} from '../faults/tcp-fault-proxy.js';
import {dropTable, openPool, uniqueName} from './stores.js';

interface Database {
	[table: string]: {key: string | null; item: string};
}

/** One way to write the effect inside the handler's transaction. */
interface Engine {
	name: string;
	store(pool: pg.Pool, table: string, options?: {wait?: number}): TransactionalKeyStore<any>;
	/** Inserts an order row in the transaction. */
	insert(tx: any, effects: string, key: string | undefined, item: string): Promise<void>;
	/** A statement's single text value, in the transaction. */
	value(tx: any, sql: string): Promise<string>;
}

const engines: Engine[] = [
	{
		name: 'pg',
		store: (pool, table, options) => postgresTransactional(pool, {table, ...options}),
		async insert(tx: pg.PoolClient, effects, key, item) {
			await tx.query(`INSERT INTO "${effects}" (key, item) VALUES ($1, $2)`, [key ?? null, item]);
		},
		async value(tx: pg.PoolClient, sql) {
			return Object.values((await tx.query(sql)).rows[0] as object)[0] as string;
		},
	},
	...([['Kysely 0.28', Kysely, PostgresDialect], ['Kysely 0.27', Kysely027, PostgresDialect027]] as const).map(([name, KyselyClass, Dialect]): Engine => ({
		name,
		store: (pool, table, options) => kyselyTransactional(new (KyselyClass as typeof Kysely)<Database>({dialect: new (Dialect as typeof PostgresDialect)({pool})}), {table, ...options}),
		async insert(tx, effects, key, item) {
			await tx.insertInto(effects).values({key: key ?? null, item}).execute();
		},
		async value(tx, sql) {
			const {sql: raw} = await import('kysely');
			return Object.values((await raw.raw(sql).execute(tx)).rows[0] as object)[0] as string;
		},
	})),
];

/** A pool that counts its checkouts: a duplicate that waits for its key checks a connection out each time it asks again. */
class CountingPool extends pg.Pool {
	connects = 0;

	constructor(config: pg.PoolConfig) {
		super(config);
		const connect = this.connect.bind(this) as (...args: unknown[]) => unknown;
		this.connect = ((...args: unknown[]) => {
			this.connects++;
			return connect(...args);
		}) as pg.Pool['connect'];
	}
}

for (const engine of engines) {
	describe.skipIf(inject('databaseUrl') === null)(`transactional mode on ${engine.name}`, () => {
		let pool: CountingPool;
		const table = `sendonce_test_${uniqueName()}`;
		const effects = `sendonce_orders_${uniqueName()}`;
		beforeAll(async () => {
			pool = new CountingPool({connectionString: inject('databaseUrl')!, max: 10});
			await pool.query(`CREATE TABLE "${effects}" (id serial PRIMARY KEY, key text, item text NOT NULL)`);
		});
		/** Resolves once a request has checked a connection out `times` more times than now: it is asking again for its key. */
		const askedAgain = async (times: number) => {
			const before = pool.connects;
			await vi.waitFor(() => {
				expect(pool.connects).toBeGreaterThanOrEqual(before + times);
			});
		};
		afterAll(async () => {
			await dropTable(pool, table);
			await dropTable(pool, effects);
			await pool.end();
		});

		const orders = async (key: string) => (await pool.query(`SELECT item FROM "${effects}" WHERE key = $1 ORDER BY id`, [key])).rows.map(row => row.item as string);
		const post = (key: string | undefined, body: Record<string, unknown>) =>
			new Request('http://api.test/orders', {method: 'POST', headers: {'content-type': 'application/json', ...(key ? {'idempotency-key': key} : {})}, body: JSON.stringify(body)});
		let serial = 0;
		const key = () => `${engine.name.replaceAll(" ", "-")}-${++serial}-${uniqueName()}`;

		/** The order handler: writes its row in the transaction, then answers as the body says. */
		function shop(options: {wait?: number; retryAfter?: number} = {}, hooks: {started?: () => void; gate?: Promise<void>} = {}) {
			let runs = 0;
			const {wait, ...rest} = options;
			const once = idempotency({store: engine.store(pool, table, wait === undefined ? {} : {wait}), ...rest});
			const handle = once(async (request, {key: claimed, tx}) => {
				runs++;
				const body = await request.json() as {item: string; fail?: 'throw' | 503; read?: string};
				await engine.insert(tx, effects, claimed, body.item);
				hooks.started?.();
				await hooks.gate;
				if (body.fail === 'throw') throw new Error('the handler failed after its write');
				if (body.fail === 503) return new Response('try again', {status: 503});
				const read = body.read ? await engine.value(tx, body.read) : undefined;
				return Response.json({item: body.item, run: runs, read}, {status: 201});
			});
			return {handle, runs: () => runs};
		}

		test('the write and the key commit together: one row, and the duplicate replays the committed answer', async () => {
			const {handle, runs} = shop();
			const id = key();
			const first = await handle(post(id, {item: 'book'}));
			const replay = await handle(post(id, {item: 'book'}));

			expect(first.status).toBe(201);
			expect(replay.headers.get('idempotent-replayed')).toBe('true');
			expect(await replay.json()).toEqual(await first.json());
			expect(await orders(id)).toEqual(['book']);
			expect(runs()).toBe(1);
		});

		test.each(['throw', 503] as const)('a handler that fails after its write (%s) rolls back the write and the key: the retry runs, one row', async fail => {
			const {handle, runs} = shop();
			const id = key();
			if (fail === 'throw') await expect(handle(post(id, {item: 'book', fail}))).rejects.toThrow('the handler failed after its write');
			else expect((await handle(post(id, {item: 'book', fail}))).status).toBe(503);
			expect(await orders(id)).toEqual([]);

			expect((await handle(post(id, {item: 'book'}))).status).toBe(201);
			expect(await orders(id)).toEqual(['book']);
			expect(runs()).toBe(2);
		});

		test('a duplicate while the first runs waits for its commit, then replays it; the handler runs once', async () => {
			let open!: () => void;
			let started!: () => void;
			const running = new Promise<void>(resolve => {
				started = resolve;
			});
			const {handle, runs} = shop({wait: 10_000}, {started, gate: new Promise<void>(resolve => {
				open = resolve;
			})});
			const id = key();
			const first = handle(post(id, {item: 'book'}));
			await running;
			const duplicates = Array.from({length: 5}, async () => handle(post(id, {item: 'book'})));
			// Each has found the key held and asked again at least once.
			await askedAgain(10);
			open();

			const answers = await Promise.all([first, ...duplicates]);
			expect(answers.map(answer => answer.status)).toEqual([201, 201, 201, 201, 201, 201]);
			expect(answers.slice(1).map(answer => answer.headers.get('idempotent-replayed'))).toEqual(['true', 'true', 'true', 'true', 'true']);
			expect(await orders(id)).toEqual(['book']);
			expect(runs()).toBe(1);
		});

		test('a duplicate that outwaits `wait` gets 409 with Retry-After; once the first commits, it replays', async () => {
			let open!: () => void;
			let started!: () => void;
			const running = new Promise<void>(resolve => {
				started = resolve;
			});
			const {handle} = shop({wait: 200, retryAfter: 2}, {started, gate: new Promise<void>(resolve => {
				open = resolve;
			})});
			const id = key();
			const first = handle(post(id, {item: 'book'}));
			await running;
			const duplicate = await handle(post(id, {item: 'book'}));
			expect(duplicate.status).toBe(409);
			expect(duplicate.headers.get('retry-after')).toBe('2');
			open();
			expect((await first).status).toBe(201);
			expect((await handle(post(id, {item: 'book'}))).headers.get('idempotent-replayed')).toBe('true');
			expect(await orders(id)).toEqual(['book']);
		});

		test('a duplicate whose first rolled back runs itself', async () => {
			let open!: () => void;
			let started!: () => void;
			const running = new Promise<void>(resolve => {
				started = resolve;
			});
			const gate = new Promise<void>(resolve => {
				open = resolve;
			});
			const {handle, runs} = shop({wait: 10_000}, {started, gate});
			const id = key();
			const first = handle(post(id, {item: 'book', fail: 503}));
			await running;
			const duplicate = handle(post(id, {item: 'book'}));
			// The duplicate is waiting for the key: let the first fail and roll back.
			await askedAgain(3);
			open();
			expect((await first).status).toBe(503);
			const answer = await duplicate;
			expect(answer.status).toBe(201);
			expect(await answer.json()).toMatchObject({item: 'book', run: 2});
			expect(await orders(id)).toEqual(['book']);
			expect(runs()).toBe(2);
		});

		test('a replay reads the committed answer without waiting for the key\'s lock (replays never queue)', async () => {
			const {handle} = shop({wait: 10_000});
			const id = key();
			await handle(post(id, {item: 'book'}));
			// Another request holds the key's lock for as long as this test runs.
			const holder = await pool.connect();
			onTestFinished(() => holder.release());
			await holder.query('BEGIN');
			await holder.query('SELECT pg_advisory_xact_lock(hashtextextended($1 || \' \' || $2, 0))', [table, id]);
			// Were it to wait for the lock, it would get 409 after `wait`.
			const replay = await handle(post(id, {item: 'book'}));
			expect(replay.headers.get('idempotent-replayed')).toBe('true');
			await holder.query('ROLLBACK');
		});

		test('the same key with another body is 422 and writes nothing', async () => {
			const {handle} = shop();
			const id = key();
			await handle(post(id, {item: 'book'}));
			const other = await handle(post(id, {item: 'lamp'}));
			expect(other.status).toBe(422);
			expect(await orders(id)).toEqual(['book']);
		});

		test('a request without a key runs in a transaction too', async () => {
			const {handle} = shop();
			const item = `keyless-${uniqueName()}`;
			expect((await handle(post(undefined, {item}))).status).toBe(201);
			expect((await pool.query(`SELECT key FROM "${effects}" WHERE item = $1`, [item])).rows).toEqual([{key: null}]);
		});

		test('an answer past its ttl is taken over: the key runs again', async () => {
			const {handle, runs} = shop();
			const id = key();
			await handle(post(id, {item: 'book'}));
			await pool.query(`UPDATE "${table}" SET expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
			const again = await handle(post(id, {item: 'book'}));
			expect(again.headers.get('idempotent-replayed')).toBeNull();
			expect(await orders(id)).toEqual(['book', 'book']);
			expect(runs()).toBe(2);
		});

		test('only a committed answer is sent: a commit that fails rejects, and the retry runs', async () => {
			const guarded = `${effects}_${engine.name.replaceAll(/\W/g, '_')}`;
			await pool.query(`CREATE TABLE "${guarded}" (item text, CONSTRAINT "${guarded}_once" UNIQUE (item) DEFERRABLE INITIALLY DEFERRED)`);
			onTestFinished(async () => dropTable(pool, guarded));
			await pool.query(`INSERT INTO "${guarded}" VALUES ('taken')`);
			let runs = 0;
			const handle = idempotency({store: engine.store(pool, table)})(async (request, {tx}) => {
				runs++;
				const {item} = await request.json() as {item: string};
				// Checked at COMMIT: the handler answers, the commit fails.
				await engine.value(tx, `INSERT INTO "${guarded}" VALUES ('${item}') RETURNING item`);
				return Response.json({item}, {status: 201});
			});
			const id = key();
			await expect(handle(post(id, {item: 'taken'}))).rejects.toThrow(`duplicate key value violates unique constraint "${guarded}_once"`);
			await pool.query(`DELETE FROM "${guarded}"`);
			expect((await handle(post(id, {item: 'taken'}))).status).toBe(201);
			expect(runs).toBe(2);
		});

		test('lease is refused, by the types and at run time: no claim can expire in a transaction', () => {
			const store = engine.store(pool, table) as ReturnType<typeof postgresTransactional<pg.Pool>>;
			// @ts-expect-error `lease` has no meaning with a transactional store
			expect(() => idempotency({store, lease: 1000})).toThrow(/^Unknown option `lease` with a transactional store/);
		});
	});
}

describe.skipIf(inject('databaseUrl') === null)('postgresTransactional when the connection dies mid-transaction', () => {
	test('a reset rejects the request without crashing the process; the key and the write roll back, and the retry runs once', async () => {
		const direct = openPool();
		const upstream = new URL(inject('databaseUrl')!);
		const proxy = await new TcpFaultProxy({host: upstream.hostname, port: Number(upstream.port || 5432)}).listen();
		upstream.hostname = '127.0.0.1';
		upstream.port = String(proxy.port);
		const faulty = new pg.Pool({connectionString: upstream.toString()});
		// The pool's own listener covers idle clients; a checked-out one is the store's to hear.
		faulty.on('error', () => undefined);
		const table = `sendonce_test_${uniqueName()}`;
		const effects = `sendonce_orders_${uniqueName()}`;
		onTestFinished(async () => {
			await faulty.end();
			await proxy.close();
			await dropTable(direct, table);
			await dropTable(direct, effects);
			await direct.end();
		});
		await direct.query(`CREATE TABLE "${effects}" (key text NOT NULL)`);

		let started!: () => void;
		const running = new Promise<void>(resolve => {
			started = resolve;
		});
		let runs = 0;
		const handle = idempotency({store: postgresTransactional(faulty, {table, cleanupInterval: 0})})(async (_request, {key, tx}) => {
			runs++;
			await tx.query(`INSERT INTO "${effects}" (key) VALUES ($1)`, [key]);
			if (runs === 1) {
				started();
				await tx.query('SELECT pg_sleep(5)');
			}

			return new Response(null, {status: 201});
		});
		const request = () => new Request('http://api.test/orders', {method: 'POST', headers: {'idempotency-key': 'reset-1'}, body: '{}'});

		const first = handle(request());
		await running;
		proxy.inject({type: 'reset'});
		await expect(first).rejects.toThrow();
		expect((await handle(request())).status).toBe(201);
		expect((await handle(request())).headers.get('idempotent-replayed')).toBe('true');
		expect((await direct.query(`SELECT key FROM "${effects}"`)).rows).toEqual([{key: 'reset-1'}]);
		expect(runs).toBe(2);
	});
});

describe.skipIf(inject('databaseUrl') === null)('postgresTransactional and the claim it sends with BEGIN', () => {
	test('a scope of quotes, backslashes and SQL is a key like any other: its row holds it verbatim, and it replays', async () => {
		const pool = openPool();
		const table = `sendonce_test_${uniqueName()}`;
		onTestFinished(async () => {
			await dropTable(pool, table);
			await pool.end();
		});
		const scope = 'O\'Brien\\"; DROP TABLE users; -- $1 \'\'';
		let runs = 0;
		const handle = idempotency({store: postgresTransactional(pool, {table}), scope: () => scope})(async () => Response.json({run: ++runs}, {status: 201}));
		const request = () => new Request('http://api.test/orders', {method: 'POST', headers: {'idempotency-key': 'quoted'}, body: '{}'});
		await handle(request());
		expect((await handle(request())).headers.get('idempotent-replayed')).toBe('true');
		expect((await pool.query(`SELECT id FROM "${table}" WHERE id <> ''`)).rows).toEqual([{id: `${scope} quoted`}]);
		expect(runs).toBe(1);
	});

	test('a scope with a NUL is refused before anything is claimed', async () => {
		const pool = openPool();
		const table = `sendonce_test_${uniqueName()}`;
		onTestFinished(async () => {
			await dropTable(pool, table);
			await pool.end();
		});
		const handle = idempotency({store: postgresTransactional(pool, {table}), scope: () => 'a\0b'})(async () => new Response(null, {status: 201}));
		await expect(handle(new Request('http://api.test/orders', {method: 'POST', headers: {'idempotency-key': 'nul'}, body: '{}'}))).rejects.toThrow(/^Expected `scope` to return well-formed text without NUL/);
		// Refused before the store was asked anything: not even its table was made.
		expect((await pool.query('SELECT to_regclass($1) AS made', [`"${table}"`])).rows).toEqual([{made: null}]);
	});
});

describe.skipIf(inject('databaseUrl') === null)('round trips of postgresTransactional', () => {
	test('a first request costs one round trip more than the same work in a bare transaction; a replay waits for one', async () => {
		const pool = openPool();
		const table = `sendonce_test_${uniqueName()}`;
		const effects = `sendonce_orders_${uniqueName()}`;
		onTestFinished(async () => {
			await dropTable(pool, table);
			await dropTable(pool, effects);
			await pool.end();
		});
		await pool.query(`CREATE TABLE "${effects}" (key text)`);
		const sent: string[] = [];
		const answered: string[] = [];
		// Every statement a checked-out client sends: one round trip each.
		const wrapped = new WeakSet<object>();
		const counted = {
			query: pool.query.bind(pool),
			async connect() {
				const client = await pool.connect();
				if (!wrapped.has(client)) {
					wrapped.add(client);
					const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
					Object.assign(client, {query: async (...args: unknown[]) => {
						const name = String(args[0]).split(/\s+/)[0]!;
						sent.push(name);
						try {
							return await query(...args);
						} finally {
							answered.push(name);
						}
					}});
				}

				return client;
			},
		} as unknown as pg.Pool;
		const handle = idempotency({store: postgresTransactional(counted, {table, cleanupInterval: 0})})(async (_request, {key, tx}) => {
			await tx.query(`INSERT INTO "${effects}" (key) VALUES ($1)`, [key]);
			return new Response(null, {status: 201});
		});
		const request = () => new Request('http://api.test/orders', {method: 'POST', headers: {'idempotency-key': 'counted'}, body: '{}'});

		// The table is made first, outside the transaction, once.
		await handle(request());
		await pool.query(`DELETE FROM "${table}"`);
		sent.length = 0;
		await handle(request());
		// A bare route would send BEGIN, its INSERT, COMMIT: the claim rides with BEGIN, the answer is one UPDATE.
		expect(sent).toEqual(['BEGIN', 'INSERT', 'UPDATE', 'COMMIT']);
		sent.length = 0;
		answered.length = 0;
		const replay = await handle(request());
		// The answer waits only for the claim that read it; the rollback ends the transaction after.
		expect(answered).toEqual(['BEGIN']);
		expect(replay.status).toBe(201);
		expect(replay.headers.get('idempotent-replayed')).toBe('true');
		expect(sent).toEqual(['BEGIN', 'ROLLBACK']);
		// The connection goes back to the pool once its transaction has ended, never inside it.
		await vi.waitFor(() => {
			expect(answered).toEqual(['BEGIN', 'ROLLBACK']);
			expect(pool.idleCount).toBe(pool.totalCount);
		});
		// Two effects: the run that made the table, and the one after its key was deleted; none from the replay.
		const {rows} = await pool.query(`SELECT count(*)::int AS effects, now() = statement_timestamp() AS outside FROM "${effects}"`);
		expect(rows).toEqual([{effects: 2, outside: true}]);
	});
});

describe.skipIf(inject('databaseUrl') === null)('a process starting while transactions are open', () => {
	test('its first claim does not wait behind them: a table that exists is looked up, not created again', async () => {
		const pool = openPool();
		const table = `sendonce_test_${uniqueName()}`;
		onTestFinished(async () => {
			await dropTable(pool, table);
			await pool.end();
		});
		let open!: () => void;
		const gate = new Promise<void>(resolve => {
			open = resolve;
		});
		let started!: () => void;
		const running = new Promise<void>(resolve => {
			started = resolve;
		});
		const first = idempotency({store: postgresTransactional(pool, {table})})(async () => {
			started();
			await gate;
			return new Response(null, {status: 201});
		});
		const request = (key: string) => new Request('http://api.test/orders', {method: 'POST', headers: {'idempotency-key': key}, body: '{}'});
		const holding = first(request('held'));
		await running;

		// A second process: a store of its own, on the same table, while the first holds its key's row.
		const second = idempotency({store: postgresTransactional(pool, {table})})(async () => new Response(null, {status: 201}));
		expect((await second(request('fresh'))).status).toBe(201);
		open();
		expect((await holding).status).toBe(201);
	});
});

// What a hostile review of transactional mode found (each failed before its fix).
describe.skipIf(inject('databaseUrl') === null)('transactional mode, as a hostile review tried it', () => {
	let pool: pg.Pool;
	const table = `sendonce_test_${uniqueName()}`;
	const orders = `sendonce_orders_${uniqueName()}`;
	beforeAll(async () => {
		pool = openPool();
		await pool.query(`CREATE TABLE "${orders}" (key text, item text UNIQUE)`);
	});
	afterAll(async () => {
		await dropTable(pool, table);
		await dropTable(pool, orders);
		await pool.end();
	});
	const request = (key: string | undefined, body: unknown = {}) => new Request('http://api.test/orders', {method: 'POST', headers: {'content-type': 'application/json', ...(key ? {'idempotency-key': key} : {})}, body: JSON.stringify(body)});

	test.each(engines)('a request without a key whose handler caught a failed statement is refused, not answered 201 for a rolled-back order ($name)', async engine => {
		const item = `taken-${uniqueName()}`;
		await pool.query(`INSERT INTO "${orders}" (item) VALUES ($1)`, [item]);
		const handle = idempotency({store: engine.store(pool, table)})(async (_request, {tx}) => {
			await engine.insert(tx, orders, 'other', 'also-here').catch(() => undefined);
			// The unique violation aborts the transaction; the handler carries on as if it had not.
			await engine.insert(tx, orders, undefined, item).catch(() => undefined);
			return new Response(null, {status: 201});
		});
		await expect(handle(request(undefined))).rejects.toThrow();
		expect((await pool.query(`SELECT count(*)::int AS n FROM "${orders}" WHERE item = 'also-here'`)).rows).toEqual([{n: 0}]);
	});

	test('ctx.tx used after its transaction ended refuses, instead of writing into whatever transaction its connection is in by then', async () => {
		let later!: () => Promise<unknown>;
		const handle = idempotency({store: postgresTransactional(pool, {table})})(async (_request, {tx}) => {
			later = async () => tx.query(`INSERT INTO "${orders}" (key, item) VALUES ('late', $1)`, [uniqueName()]);
			return new Response(null, {status: 201});
		});
		expect((await handle(request(uniqueName()))).status).toBe(201);
		await expect(later()).rejects.toThrow('`ctx.tx` was used after its transaction ended');
		expect((await pool.query(`SELECT count(*)::int AS n FROM "${orders}" WHERE key = 'late'`)).rows).toEqual([{n: 0}]);
	});

	test('a pg.Query (or pg-cursor, pg-query-stream) submitted on ctx.tx after its transaction ended is told so by an error event, and nothing is left unhandled', async () => {
		let later!: () => pg.Query;
		const handle = idempotency({store: postgresTransactional(pool, {table})})(async (_request, {tx}) => {
			later = () => tx.query(new pg.Query('SELECT 1'));
			return new Response(null, {status: 201});
		});
		await handle(request(uniqueName()));
		const query = later();
		const error = await new Promise<Error>(resolve => query.once('error', resolve));
		expect(error.message).toContain('`ctx.tx` was used after its transaction ended');
	});

	test('two keys whose 32-bit hashes collide do not wait on each other', async () => {
		// 200,000 names hold no colliding pair about once in a hundred runs (e^-4.7); 600,000, about
		// once in 10^18 (e^-42): a run of this test failed for want of one, 5 December 2026.
		const {rows} = await pool.query('SELECT array_agg(key) AS keys FROM (SELECT $1 || i AS key, hashtext($1 || i) AS h FROM generate_series(1, 600000) i) s GROUP BY h HAVING count(*) > 1 LIMIT 1', [`${uniqueName()}-`]);
		const [slow, other] = rows[0].keys as [string, string];
		let open!: () => void;
		let started!: () => void;
		const running = new Promise<void>(resolve => {
			started = resolve;
		});
		const gate = new Promise<void>(resolve => {
			open = resolve;
		});
		const handle = idempotency({store: postgresTransactional(pool, {table, wait: 200})})(async request => {
			if (request.headers.get('idempotency-key') === slow) {
				started();
				await gate;
			}

			return new Response(null, {status: 201});
		});
		const first = handle(request(slow));
		await running;
		expect((await handle(request(other))).status).toBe(201);
		open();
		expect((await first).status).toBe(201);
	});

	test('duplicates waiting for a held key hold no connection: a request for another key goes through meanwhile', async () => {
		const small = new pg.Pool({connectionString: inject('databaseUrl')!, max: 4});
		onTestFinished(async () => small.end());
		let open!: () => void;
		const gate = new Promise<void>(resolve => {
			open = resolve;
		});
		let started!: () => void;
		const running = new Promise<void>(resolve => {
			started = resolve;
		});
		const handle = idempotency({store: postgresTransactional(small, {table, wait: 10_000})})(async request => {
			if (request.headers.get('x-hold')) {
				started();
				await gate;
			}

			return new Response(null, {status: 201});
		});
		const held = handle(new Request('http://api.test/orders', {method: 'POST', headers: {'idempotency-key': 'hot', 'x-hold': '1'}, body: '{}'}));
		await running;
		let settled = 0;
		const duplicates = Array.from({length: 12}, async () => handle(request('hot')).finally(() => settled++));
		// Were each duplicate to wait holding a connection, this would wait `wait` for one.
		expect((await handle(request(`other-${uniqueName()}`))).status).toBe(201);
		expect(settled).toBe(0);
		open();
		expect((await held).status).toBe(201);
		expect((await Promise.all(duplicates)).map(answer => answer.headers.get('idempotent-replayed'))).toEqual(Array.from({length: 12}, () => 'true'));
	});

	test('connections whose default isolation is SERIALIZABLE: first requests at once all succeed, duplicates replay', async () => {
		const serializable = new pg.Pool({connectionString: inject('databaseUrl')!, max: 10, options: '-c default_transaction_isolation=serializable'});
		onTestFinished(async () => serializable.end());
		let runs = 0;
		const handle = idempotency({store: postgresTransactional(serializable, {table})})(async () => Response.json({run: ++runs}, {status: 201}));
		const firsts = await Promise.all(Array.from({length: 20}, async (_, index) => handle(request(`serializable-${index}-${uniqueName()}`))));
		expect(firsts.map(answer => answer.status)).toEqual(Array.from({length: 20}, () => 201));
		const key = `serializable-dup-${uniqueName()}`;
		const answers = await Promise.all(Array.from({length: 8}, async () => handle(request(key))));
		expect(answers.map(answer => answer.status)).toEqual(Array.from({length: 8}, () => 201));
		expect(runs).toBe(21);
	});

	test('a transactional claim never takes over a live lease on a table the lease store shares', async () => {
		const shared = `sendonce_test_${uniqueName()}`;
		onTestFinished(async () => dropTable(pool, shared));
		const fingerprint = await requestFingerprint('POST', '/orders', 'application/json', new TextEncoder().encode('{}'));
		await postgresKeyStore(pool, {table: shared}).claim('leased', {fingerprint, lease: 30_000, ttl: 60_000});
		let runs = 0;
		const handle = idempotency({store: postgresTransactional(pool, {table: shared, wait: 200})})(async () => new Response(null, {status: 201 + runs++}));
		expect((await handle(request('leased'))).status).toBe(409);
		expect(runs).toBe(0);
	});
});
