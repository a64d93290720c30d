/*
 * The server under load for `npm run bench:server`, in a process of its own: a trivial handler
 * (201 and a small JSON body) served by node:http through `toNodeHandler`, bare or wrapped by
 * `idempotency()` on the store named by VARIANT. It says `{url}` over IPC once it listens.
 *
 *   VARIANT=bare|memory|redis|postgres  REDIS_URL  DATABASE_URL  PREFIX  TABLE
 */
import {createServer} from 'node:http';
import type {AddressInfo} from 'node:net';
import pg from 'pg';
import {createClient} from 'redis';
import {idempotency, memoryKeyStore, toNodeHandler, type KeyStore} from '../src/server.js';
import {postgresKeyStore} from '../src/server/postgres.js';
import {redisKeyStore} from '../src/server/redis.js';

const {VARIANT = 'bare', REDIS_URL = 'redis://127.0.0.1:6379', DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test', PREFIX = 'sendonce-bench:', TABLE = 'sendonce_bench'} = process.env;

async function store(): Promise<KeyStore | undefined> {
	switch (VARIANT) {
		case 'bare': return undefined;
		case 'memory': return memoryKeyStore();
		case 'redis': return redisKeyStore(await createClient({url: REDIS_URL}).connect(), {prefix: PREFIX});
		case 'postgres': return postgresKeyStore(new pg.Pool({connectionString: DATABASE_URL, max: 20}), {table: TABLE});
		default: throw new TypeError(`Expected VARIANT to be bare, memory, redis or postgres, got ${VARIANT}`);
	}
}

const trivial = async () => Response.json({id: 1, ok: true}, {status: 201});
const keys = await store();
const handler = keys ? idempotency({store: keys})(trivial) : trivial;
const server = createServer(toNodeHandler(handler));
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
	process.send?.({url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`});
});
process.on('disconnect', () => process.exit(0));
