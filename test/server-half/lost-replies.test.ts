// Issue 30: every store command is idempotent per call, so a command whose reply was lost with its
// connection changes nothing, whether the client library sends it again (ioredis) or rejects it and
// the store sends it again (node-redis, pg). One matrix: each store and client × each command
// (claim, takeover, answer, release). Run at each end of the peer ranges (test/peers).
import Redis from 'ioredis';
import pg from 'pg';
import {createClient as createNodeRedis} from 'redis';
import {describe, expect, inject, test} from 'vitest';
import type {KeyStore} from '../../src/server.js';
import {postgresKeyStore} from '../../src/server/postgres.js';
import {redisKeyStore} from '../../src/server/redis.js';
import {TcpFaultProxy} from '../faults/tcp-fault-proxy.js';
import {closers} from './servers.js';
import {closeNodeRedis, dropTable, uniqueName} from './stores.js';

const redisUrl = inject('redisUrl');
const databaseUrl = inject('databaseUrl');

/** A store reached through a TCP fault proxy, and what it lets a test read directly. */
interface Proxied {
	proxy: TcpFaultProxy;
	store: KeyStore;
	/** The stored row of `id`, read past the proxy (PostgreSQL only). */
	row?: (id: string) => Promise<unknown>;
}

/** A proxy in front of `url`'s server. */
async function proxyTo(url: string, port: number): Promise<TcpFaultProxy> {
	const {hostname, port: given} = new URL(url);
	return new TcpFaultProxy({host: hostname, port: Number(given || port)}).listen();
}

/** Redis through `kind` at its defaults: ioredis sends a command whose reply was lost again once it reconnects (autoResendUnfulfilledCommands); node-redis rejects it, and the store sends it again itself. */
async function throughRedis(kind: 'ioredis' | 'node-redis'): Promise<Proxied> {
	const proxy = await proxyTo(redisUrl!, 6379);
	const client = kind === 'ioredis'
		? new Redis({host: '127.0.0.1', port: proxy.port, retryStrategy: () => 10, lazyConnect: true})
		: createNodeRedis({url: `redis://127.0.0.1:${proxy.port}`, socket: {reconnectStrategy: () => 10}});
	client.on('error', () => undefined);
	await client.connect();
	const prefix = `sendonce-test:${uniqueName()}:`;
	closers.push(async () => {
		if (client instanceof Redis) client.disconnect();
		else closeNodeRedis(client);
		await proxy.close();
		const direct = new Redis(redisUrl!);
		const keys = await direct.keys(`${prefix}*`);
		if (keys.length > 0) await direct.del(...keys);
		direct.disconnect();
	});
	return {proxy, store: redisKeyStore(client, {prefix})};
}

/** PostgreSQL in lease mode through pg, which rejects a query whose connection broke (its pool drops that client). */
async function throughPostgres(): Promise<Proxied> {
	const proxy = await proxyTo(databaseUrl!, 5432);
	const url = new URL(databaseUrl!);
	url.hostname = '127.0.0.1';
	url.port = String(proxy.port);
	const pool = new pg.Pool({connectionString: url.toString(), max: 2});
	pool.on('error', () => undefined);
	const direct = new pg.Pool({connectionString: databaseUrl!, max: 1});
	const table = `sendonce_test_${uniqueName()}`;
	closers.push(async () => {
		await pool.end();
		await proxy.close();
		await dropTable(direct, table);
		await direct.end();
	});
	const store = postgresKeyStore(pool, {table, cleanupInterval: 0});
	// The table made first, so that the lost reply is the statement's own.
	await store.claim('warm-up', {fingerprint: 'w', lease: 5000, ttl: 60_000});
	return {proxy, store, row: async id => (await direct.query(`SELECT fence::text AS fence, claim, format FROM "${table}" WHERE id = $1`, [id])).rows[0] as unknown};
}

const kinds = [
	{name: 'Redis through ioredis', available: redisUrl !== null, open: async () => throughRedis('ioredis'), takeover: '4999'},
	{name: 'Redis through node-redis', available: redisUrl !== null, open: async () => throughRedis('node-redis'), takeover: '4999'},
	// The takeover's own statement is the one that locks the free row.
	{name: 'PostgreSQL through pg', available: databaseUrl !== null, open: throughPostgres, takeover: 'FOR UPDATE'},
];

const answer = {status: 201, headers: [], body: new Uint8Array([1])};

describe.each(kinds)('$name, at its defaults: a command whose reply was lost changes nothing', ({available, open, takeover}) => {
	test.skipIf(!available)('a claim sent again is its own claim, not a phantom holder (no 409, no lease-lost for a handler that never ran)', async () => {
		const {proxy, store, row} = await open();
		proxy.inject({type: 'lose-reply', contains: 'fingerprint-resent'});
		const claimed = await store.claim('k-1', {fingerprint: 'fingerprint-resent', lease: 5000, ttl: 60_000});
		expect(claimed).toMatchObject({state: 'claimed'});
		expect((claimed as {supersedes?: number}).supersedes).toBeUndefined();
		const {fence} = claimed as {fence: number};
		if (row) expect(await row('k-1')).toEqual({fence: String(fence), claim: expect.stringMatching(new RegExp(`@${fence}$`)) as string, format: 2});
		expect(await store.complete('k-1', {fence, fingerprint: 'fingerprint-resent', answer, ttl: 60_000})).toBe(true);
	});

	test.skipIf(!available)('a takeover sent again is its own claim, and still says which claim it took over', async () => {
		const {proxy, store} = await open();
		const first = await store.claim('k-5', {fingerprint: 'f', lease: 50, ttl: 60_000}) as {fence: number};
		await new Promise(resolve => setTimeout(resolve, 80));
		proxy.inject({type: 'lose-reply', contains: takeover});
		expect(await store.claim('k-5', {fingerprint: 'f', lease: 4999, ttl: 60_000})).toMatchObject({state: 'claimed', supersedes: first.fence});
	});

	test.skipIf(!available)('an answer sent again is stored once, and reported stored, not lost', async () => {
		const {proxy, store} = await open();
		const claimed = await store.claim('k-2', {fingerprint: 'fingerprint-answered', lease: 5000, ttl: 60_000}) as {fence: number};
		// The fingerprint is sent with the answer too: the next command that carries it is the answer's.
		proxy.inject({type: 'lose-reply', contains: 'fingerprint-answered'});
		expect(await store.complete('k-2', {fence: claimed.fence, fingerprint: 'fingerprint-answered', answer, ttl: 60_000})).toBe(true);
		expect(await store.claim('k-2', {fingerprint: 'fingerprint-answered', lease: 5000, ttl: 60_000})).toMatchObject({state: 'done', answer: {status: 201}});
	});

	test.skipIf(!available)('a release sent again leaves the key free for the next claim', async () => {
		const {proxy, store} = await open();
		const claimed = await store.claim('k-3', {fingerprint: 'f', lease: 5000, ttl: 60_000}) as {fence: number};
		proxy.inject({type: 'lose-reply', contains: String(claimed.fence)});
		await store.release('k-3', {fence: claimed.fence});
		expect(await store.claim('k-3', {fingerprint: 'f', lease: 5000, ttl: 60_000})).toMatchObject({state: 'claimed'});
	});
});

test('an error PostgreSQL answered is not sent again', async () => {
	let sent = 0;
	const store = postgresKeyStore({query: async () => {
		sent++;
		throw Object.assign(new Error('permission denied for table'), {code: '42501'});
	}}, {createTable: false, cleanupInterval: 0});
	await expect(store.claim('k-4', {fingerprint: 'f', lease: 5000, ttl: 60_000})).rejects.toThrow('permission denied');
	expect(sent).toBe(1);
});

test('an error Redis answered is not sent again', async () => {
	let sent = 0;
	const store = redisKeyStore({sendCommand: async (args: string[]) => {
		// The claim's (not the marker's, sent as the store is made, and refused the same way).
		if (args[3] === 'sendonce:k-6') sent++;
		throw new Error('NOPERM this user has no permissions to run the \'evalsha\' command');
	}});
	await expect(store.claim('k-6', {fingerprint: 'f', lease: 5000, ttl: 60_000})).rejects.toThrow('NOPERM');
	expect(sent).toBe(1);
});
