// Issue 30: every store command is idempotent per call, so a command whose reply was lost with its
// connection changes nothing, whether the client library sends it again (ioredis) or rejects it and
// the store sends it again (node-redis, pg). Run at each end of the peer ranges (test/peers).
import Redis from 'ioredis';
import pg from 'pg';
import {createClient as createNodeRedis} from 'redis';
import {describe, expect, inject, test} from 'vitest';
import {postgresKeyStore} from '../../src/server/postgres.js';
import {redisKeyStore} from '../../src/server/redis.js';
import {TcpFaultProxy} from '../faults/tcp-fault-proxy.js';
import {closers} from './servers.js';
import {closeNodeRedis, dropTable, uniqueName} from './stores.js';

const redisUrl = inject('redisUrl');
describe.skipIf(redisUrl === null).each(['ioredis', 'node-redis'] as const)('Redis through %s, its defaults: a command whose reply was lost changes nothing', kind => {
	async function throughProxy() {
		const {hostname, port} = new URL(redisUrl!);
		const proxy = await new TcpFaultProxy({host: hostname, port: Number(port || 6379)}).listen();
		// ioredis sends a command whose reply was lost with the connection again once it reconnects
		// (autoResendUnfulfilledCommands); node-redis rejects it, and the store sends it again itself.
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

	test('a claim sent again is its own claim, not a phantom holder (no 409, no lease-lost for a handler that never ran)', async () => {
		const {proxy, store} = await throughProxy();
		proxy.inject({type: 'lose-reply', contains: 'fingerprint-resent'});
		const claimed = await store.claim('k-1', {fingerprint: 'fingerprint-resent', lease: 5000, ttl: 60_000});
		expect(claimed).toMatchObject({state: 'claimed'});
		expect((claimed as {supersedes?: number}).supersedes).toBeUndefined();
		const fence = (claimed as {fence: number}).fence;
		expect(await store.complete('k-1', {fence, fingerprint: 'fingerprint-resent', answer: {status: 201, headers: [], body: new Uint8Array([1])}, ttl: 60_000})).toBe(true);
	});

	test('an answer sent again is stored once, and reported stored, not lost', async () => {
		const {proxy, store} = await throughProxy();
		const claimed = await store.claim('k-2', {fingerprint: 'fingerprint-answered', lease: 5000, ttl: 60_000}) as {fence: number};
		// The fingerprint is sent with the answer too: the next command that carries it is the answer's.
		proxy.inject({type: 'lose-reply', contains: 'fingerprint-answered'});
		expect(await store.complete('k-2', {fence: claimed.fence, fingerprint: 'fingerprint-answered', answer: {status: 201, headers: [], body: new Uint8Array([1])}, ttl: 60_000})).toBe(true);
		expect(await store.claim('k-2', {fingerprint: 'fingerprint-answered', lease: 5000, ttl: 60_000})).toMatchObject({state: 'done', answer: {status: 201}});
	});

	test('a release sent again leaves the key free for the next claim', async () => {
		const {proxy, store} = await throughProxy();
		const claimed = await store.claim('k-3', {fingerprint: 'f', lease: 5000, ttl: 60_000}) as {fence: number};
		proxy.inject({type: 'lose-reply', contains: String(claimed.fence)});
		await store.release('k-3', {fence: claimed.fence});
		expect(await store.claim('k-3', {fingerprint: 'f', lease: 5000, ttl: 60_000})).toMatchObject({state: 'claimed'});
	});
});

const databaseUrl = inject('databaseUrl');
describe.skipIf(databaseUrl === null)('PostgreSQL through pg, lease mode: a statement whose reply was lost changes nothing', () => {
	async function throughProxy() {
		const url = new URL(databaseUrl!);
		const proxy = await new TcpFaultProxy({host: url.hostname, port: Number(url.port || 5432)}).listen();
		url.hostname = '127.0.0.1';
		url.port = String(proxy.port);
		// pg rejects a query whose connection broke, and its pool drops that client: the store sends the statement again.
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
		return {proxy, store, direct, table};
	}

	test('a claim sent again is its own claim, not a phantom holder', async () => {
		const {proxy, store, direct, table} = await throughProxy();
		proxy.inject({type: 'lose-reply', contains: 'fingerprint-resent'});
		const claimed = await store.claim('k-1', {fingerprint: 'fingerprint-resent', lease: 5000, ttl: 60_000});
		expect(claimed).toMatchObject({state: 'claimed'});
		const {rows} = await direct.query(`SELECT fence::text AS fence, claim, format FROM "${table}" WHERE id = 'k-1'`);
		expect(rows).toEqual([{fence: String((claimed as {fence: number}).fence), claim: expect.stringMatching(/@\d+$/) as string, format: 2}]);
		expect(await store.complete('k-1', {fence: (claimed as {fence: number}).fence, fingerprint: 'fingerprint-resent', answer: {status: 201, headers: [], body: new Uint8Array([1])}, ttl: 60_000})).toBe(true);
	});

	test('an answer sent again is stored once, and reported stored, not lost', async () => {
		const {proxy, store} = await throughProxy();
		const claimed = await store.claim('k-2', {fingerprint: 'fingerprint-answered', lease: 5000, ttl: 60_000}) as {fence: number};
		proxy.inject({type: 'lose-reply', contains: 'fingerprint-answered'});
		expect(await store.complete('k-2', {fence: claimed.fence, fingerprint: 'fingerprint-answered', answer: {status: 201, headers: [], body: new Uint8Array([1])}, ttl: 60_000})).toBe(true);
		expect(await store.claim('k-2', {fingerprint: 'fingerprint-answered', lease: 5000, ttl: 60_000})).toMatchObject({state: 'done', answer: {status: 201}});
	});

	test('a release sent again leaves the key free for the next claim', async () => {
		const {proxy, store} = await throughProxy();
		const claimed = await store.claim('k-3', {fingerprint: 'f', lease: 5000, ttl: 60_000}) as {fence: number};
		proxy.inject({type: 'lose-reply', contains: String(claimed.fence)});
		await store.release('k-3', {fence: claimed.fence});
		expect(await store.claim('k-3', {fingerprint: 'f', lease: 5000, ttl: 60_000})).toMatchObject({state: 'claimed'});
	});

	test('a takeover sent again is its own claim, and still says which claim it took over', async () => {
		const {proxy, store} = await throughProxy();
		const first = await store.claim('k-5', {fingerprint: 'f', lease: 50, ttl: 60_000}) as {fence: number};
		await new Promise(resolve => setTimeout(resolve, 80));
		// The takeover's statement is the one that locks the free row.
		proxy.inject({type: 'lose-reply', contains: 'FOR UPDATE'});
		expect(await store.claim('k-5', {fingerprint: 'f', lease: 5000, ttl: 60_000})).toMatchObject({state: 'claimed', supersedes: first.fence});
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
});
