/*
 * The server under load for `npm run bench:server`, in a process of its own: a trivial handler
 * (201 and a small JSON body) served by node:http through `toNodeHandler`, bare or wrapped by
 * `idempotency()` on the store named by VARIANT. The `-tx` variants' handler writes one row in a
 * PostgreSQL transaction: bare (`BEGIN`, `INSERT`, `COMMIT`) or with `postgresTransactional`,
 * where the key is claimed in that transaction. It says `{url}` over IPC once it listens.
 *
 *   VARIANT=bare|memory|redis|postgres|bare-tx|transactional  REDIS_URL  DATABASE_URL  PREFIX  TABLE
 */
import {createServer} from 'node:http';
import type {AddressInfo} from 'node:net';
import pg from 'pg';
import {createClient} from 'redis';
import {idempotency, memoryKeyStore, toNodeHandler, type KeyStore} from '../src/server.js';
import {postgresKeyStore, postgresTransactional} from '../src/server/postgres.js';
import {redisKeyStore} from '../src/server/redis.js';

const {VARIANT = 'bare', REDIS_URL = 'redis://127.0.0.1:6379', DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test', PREFIX = 'sendonce-bench:', TABLE = 'sendonce_bench'} = process.env;

async function store(): Promise<KeyStore | undefined> {
	switch (VARIANT) {
		case 'bare': return undefined;
		case 'memory': return memoryKeyStore();
		case 'redis': return redisKeyStore(await createClient({url: REDIS_URL}).connect(), {prefix: PREFIX});
		case 'postgres': return postgresKeyStore(new pg.Pool({connectionString: DATABASE_URL, max: 20}), {table: TABLE});
		case 'bare-tx':
		case 'transactional': return undefined;
		default: throw new TypeError(`Expected VARIANT to be bare, memory, redis or postgres, got ${VARIANT}`);
	}
}

const trivial = async () => Response.json({id: 1, ok: true}, {status: 201});
const ORDERS = `${TABLE}_orders`;

async function handler(): Promise<(request: Request) => Promise<Response>> {
	if (VARIANT === 'bare-tx' || VARIANT === 'transactional') {
		const pool = new pg.Pool({connectionString: DATABASE_URL, max: 20});
		await pool.query(`CREATE TABLE IF NOT EXISTS "${ORDERS}" (id bigserial PRIMARY KEY, key text)`);
		const insert = `INSERT INTO "${ORDERS}" (key) VALUES ($1) RETURNING id`;
		if (VARIANT === 'transactional') {
			return idempotency({store: postgresTransactional(pool, {table: TABLE})})(async (_request, {key, tx}) => {
				const {rows} = await tx.query(insert, [key]);
				return Response.json({id: rows[0].id, ok: true}, {status: 201});
			});
		}

		return async request => {
			const client = await pool.connect();
			try {
				await client.query('BEGIN');
				const {rows} = await client.query(insert, [request.headers.get('idempotency-key')]);
				await client.query('COMMIT');
				return Response.json({id: rows[0].id, ok: true}, {status: 201});
			} finally {
				client.release();
			}
		};
	}

	const keys = await store();
	return keys ? idempotency({store: keys})(trivial) : trivial;
}

const server = createServer(toNodeHandler(await handler()));
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
	process.send?.({url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`});
});
process.on('disconnect', () => process.exit(0));
