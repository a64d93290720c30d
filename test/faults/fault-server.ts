/*
 * One of the fault test's server processes (test/faults/run.ts): `POST /orders` writes one row
 * in the effects table per run of its handler, and answers 201 with the order. Its store is
 * reached through the TCP fault proxy. In transactional mode the row is written in the key's own
 * transaction; in lease mode it is written beside it, on a connection of its own (after the
 * handler checked its signal, for every other order). Every `onError` report is appended to REPORTS at once, so that a
 * process killed right after still leaves it behind.
 *
 *   MODE=transactional|lease  STORE=redis|postgres  STORE_URL  EFFECTS_URL  TABLE  PREFIX
 *   EFFECTS_TABLE  LEASE (ms)  REPORTS (file)  REDIS_CLIENT=node-redis|ioredis (at its defaults)
 */
import {appendFileSync} from 'node:fs';
import {createServer} from 'node:http';
import type {AddressInfo} from 'node:net';
import Redis from 'ioredis';
import pg from 'pg';
import {createClient} from 'redis';
import {idempotency, toNodeHandler, type IdempotencyOptions, type KeyStore} from '../../src/server.js';
import {postgresKeyStore, postgresTransactional} from '../../src/server/postgres.js';
import {redisKeyStore} from '../../src/server/redis.js';

/** What a server process tells the fault test. */
export type FaultServerMessage = {type: 'listening'; url: string} | {type: 'started' | 'finished'; key: string};

const {MODE, STORE, STORE_URL, EFFECTS_URL, TABLE, PREFIX, EFFECTS_TABLE, LEASE = '1000', REPORTS, REDIS_CLIENT = 'node-redis', CLOCK_SKEW} = process.env;
/** Set where the client and the servers share a clock (the fault test's check row). */
const clockSkew = CLOCK_SKEW === undefined ? {} : {clockSkew: Number(CLOCK_SKEW)};
const send = (message: FaultServerMessage) => process.send?.(message);
const quiet = () => undefined;

const onError: IdempotencyOptions['onError'] = (error, {key, phase, fence}) => {
	appendFileSync(REPORTS!, `${JSON.stringify({key, phase, fence, pid: process.pid, error: String(error)})}\n`);
};

/** A pool whose broken connections are the fault test's doing, not a reason to crash. */
function pool(url: string): pg.Pool {
	const opened = new pg.Pool({connectionString: url, max: 10, connectionTimeoutMillis: 5000});
	opened.on('error', quiet);
	return opened;
}

async function leaseStore(): Promise<KeyStore> {
	if (STORE === 'redis' && REDIS_CLIENT === 'ioredis') {
		// ioredis's defaults: a command whose reply was lost with the connection is sent again.
		const client = new Redis(STORE_URL!);
		client.on('error', quiet);
		return redisKeyStore(client, {prefix: PREFIX});
	}

	if (STORE === 'redis') {
		// As docs/server.md advises against Redis before 7.2 (no CLIENT SETINFO): else node-redis pairs replies with the wrong commands after a reconnect.
		const client = createClient({url: STORE_URL, disableClientInfo: true, socket: {reconnectStrategy: retries => Math.min(retries * 50, 500)}});
		client.on('error', quiet);
		await client.connect();
		return redisKeyStore(client, {prefix: PREFIX});
	}

	return postgresKeyStore(pool(STORE_URL!), {table: TABLE});
}

const work = async () => new Promise(resolve => setTimeout(resolve, Math.floor(Math.random() * 60)));
const insert = `INSERT INTO "${EFFECTS_TABLE}" (order_id, key, pid, fence) VALUES ($1, $2, $3, $4)`;

async function handler(): Promise<(request: Request) => Promise<Response>> {
	if (MODE === 'transactional') {
		const once = idempotency({store: postgresTransactional(pool(STORE_URL!), {table: TABLE}), required: true, onError, ...clockSkew});
		return once(async (request, {key, tx}) => {
			send({type: 'started', key});
			try {
				const {order} = await request.json() as {order: string};
				await work();
				await tx.query(insert, [order, key, process.pid, null]);
				return Response.json({order, pid: process.pid}, {status: 201});
			} finally {
				send({type: 'finished', key});
			}
		});
	}

	const effects = pool(EFFECTS_URL!);
	const once = idempotency({store: await leaseStore(), lease: Number(LEASE), required: true, onError, ...clockSkew});
	return once(async (request, {key, fence, signal}) => {
		send({type: 'started', key});
		try {
			const {order} = await request.json() as {order: string};
			await work();
			// What a careful handler does: no effect once its lease is known to be lost. Half of them
			// do not look, so that a stalled holder's late effect meets the one that took over.
			if (Number(order.split('-').at(-1)) % 2 === 0) signal.throwIfAborted();
			await effects.query(insert, [order, key, process.pid, fence]);
			return Response.json({order, pid: process.pid}, {status: 201});
		} finally {
			send({type: 'finished', key});
		}
	});
}

const server = createServer(toNodeHandler(await handler(), {onError: quiet}));
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
	send({type: 'listening', url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`});
});
process.on('disconnect', () => process.exit(0));
