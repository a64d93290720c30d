/*
 * A server process for the multi-process tests: `sendonce/server` over the Redis or Postgres
 * store named by the environment, serving one idempotent `POST /orders` whose work takes
 * WORK_MS. Driven over IPC (test/server-half/processes.test.ts): it says `listening` with its
 * URL and `started` when a handler begins, and answers `effects` with how often the work ran.
 * With STORE=postgres-tx the key is claimed in the handler's transaction, and the work is a row
 * in EFFECTS_TABLE written in it before the wait.
 *
 *   STORE=redis|postgres|postgres-tx  REDIS_URL / DATABASE_URL  PREFIX (Redis) / TABLE (Postgres)
 *   LEASE (ms)  WORK_MS (ms)  EFFECTS_TABLE (postgres-tx)
 */
import {randomUUID} from 'node:crypto';
import {createServer} from 'node:http';
import type {AddressInfo} from 'node:net';
import pg from 'pg';
import {createClient} from 'redis';
import {idempotency, toNodeHandler, type KeyStore} from '../../src/server.js';
import {postgresKeyStore, postgresTransactional} from '../../src/server/postgres.js';
import {redisKeyStore} from '../../src/server/redis.js';

/** What the process tells its parent. */
export type AppMessage = {type: 'listening'; url: string} | {type: 'started'; key: string | undefined} | {type: 'effects'; effects: number};

const environment = process.env;
const send = (message: AppMessage) => process.send?.(message);
const work = async () => new Promise(resolve => setTimeout(resolve, Number(environment.WORK_MS ?? 0)));
let effects = 0;

async function openStore(): Promise<KeyStore> {
	if (environment.STORE === 'redis') {
		const client = await createClient({url: environment.REDIS_URL}).connect();
		return redisKeyStore(client, {prefix: environment.PREFIX});
	}

	if (environment.STORE === 'postgres') return postgresKeyStore(new pg.Pool({connectionString: environment.DATABASE_URL}), {table: environment.TABLE});
	throw new TypeError(`Expected STORE to be redis, postgres or postgres-tx, got ${environment.STORE}`);
}

async function handler(): Promise<(request: Request) => Promise<Response>> {
	if (environment.STORE === 'postgres-tx') {
		const pool = new pg.Pool({connectionString: environment.DATABASE_URL});
		const once = idempotency({store: postgresTransactional(pool, {table: environment.TABLE}), required: true});
		return once(async (_request, {key, tx}) => {
			await tx.query(`INSERT INTO "${environment.EFFECTS_TABLE}" (key, pid) VALUES ($1, $2)`, [key, process.pid]);
			send({type: 'started', key});
			await work();
			effects++;
			return Response.json({id: randomUUID(), pid: process.pid}, {status: 201});
		});
	}

	const once = idempotency({store: await openStore(), lease: Number(environment.LEASE ?? 30_000), required: true});
	return once(async (_request, {key}) => {
		send({type: 'started', key});
		await work();
		effects++;
		return Response.json({id: randomUUID(), pid: process.pid}, {status: 201});
	});
}

const server = createServer(toNodeHandler(await handler()));
server.listen(0, '127.0.0.1', () => {
	send({type: 'listening', url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`});
});
process.on('message', (message: {type?: string}) => {
	if (message.type === 'effects') send({type: 'effects', effects});
});
process.on('disconnect', () => process.exit(0));
