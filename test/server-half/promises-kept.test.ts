// Issue 30: adapters and stores that keep every promise. Each test failed on a6f9ac2.
import {createServer, request as httpRequest} from 'node:http';
import compression from 'compression';
import express4 from 'express';
import Redis from 'ioredis';
import pg from 'pg';
import {describe, expect, inject, test} from 'vitest';
import {expressIdempotency, idempotency, memoryKeyStore, type KeyStore} from '../../src/server.js';
import {postgresKeyStore, postgresTransactional, tableSql} from '../../src/server/postgres.js';
import {redisKeyStore} from '../../src/server/redis.js';
import {PREVIOUS_TABLE_SQL, previousPostgresKeyStore} from '../fixtures/previous/postgres-a6f9ac2.js';
import {redisKeyStore as previousRedisKeyStore} from '../fixtures/previous/redis-a6f9ac2.js';
import {closers, listen} from './servers.js';
import {dropTable, uniqueName} from './stores.js';

const order = (key: string) => new Request('http://localhost/orders', {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': key}, body: '{"item":"book"}'});

const databaseUrl = inject('databaseUrl');
describe.skipIf(databaseUrl === null)('transactional mode: an answer\'s ttl counts from the answer', () => {
	test('a handler slower than ttl: its committed answer is replayed, not run again', async () => {
		const pool = new pg.Pool({connectionString: databaseUrl!, max: 4});
		const table = `sendonce_test_${uniqueName()}`;
		closers.push(async () => {
			await dropTable(pool, table);
			await pool.end();
		});
		let runs = 0;
		const handler = idempotency({store: postgresTransactional(pool, {table, wait: 200}), ttl: 300})(async () => {
			runs++;
			// Longer than ttl: counted from the claim, the answer would be expired when it commits.
			await new Promise(resolve => setTimeout(resolve, 500));
			return Response.json({order: runs}, {status: 201});
		});
		expect((await handler(order('slow-1'))).status).toBe(201);
		const retry = await handler(order('slow-1'));
		expect(retry.headers.get('idempotent-replayed')).toBe('true');
		expect(await retry.json()).toEqual({order: 1});
		expect(runs).toBe(1);
	});

	test('a ttl shorter than the store\'s wait is refused, naming both', async () => {
		const pool = new pg.Pool({connectionString: databaseUrl!, max: 1});
		closers.push(async () => pool.end());
		expect(() => idempotency({store: postgresTransactional(pool, {wait: 2000}), ttl: 1000})).toThrow('Expected `ttl` (1000 ms) to be at least the store\'s `wait` (2000 ms)');
	});
});

const redisUrl = inject('redisUrl');
/**
 * A rolling deploy's race: `count` keys, each sent four times at once, alternately through an
 * instance on each store (the previous release's, this one's). Each key must run once, and both
 * instances replay its answer. Resolves to every status the duplicates got.
 */
async function raceBetween(stores: [KeyStore, KeyStore], count: number): Promise<number[]> {
	const runs = new Map<string, number>();
	const route = async (request: Request) => {
		const key = request.headers.get('idempotency-key')!;
		runs.set(key, (runs.get(key) ?? 0) + 1);
		await new Promise(resolve => setTimeout(resolve, 5));
		return Response.json({key}, {status: 201});
	};
	const instances = stores.map(store => idempotency({store, lease: 2000})(route));
	const keys = Array.from({length: count}, (_, index) => `mixed-${index}`);
	const statuses = await Promise.all(keys.flatMap(key => [0, 1, 0, 1].map(async (instance, index) => (await instances[(instance + keys.indexOf(key) + index) % 2]!(order(key))).status)));
	expect([...runs.values()].every(times => times === 1)).toBe(true);
	expect(runs.size).toBe(keys.length);
	for (const instance of instances) {
		const replay = await instance(order('mixed-7'));
		expect(replay.headers.get('idempotent-replayed')).toBe('true');
		expect(await replay.json()).toEqual({key: 'mixed-7'});
	}

	return statuses;
}

/** An ioredis client and a prefix of the test's own, its keys deleted after the test. */
function redisOnPrefix() {
	const client = new Redis(redisUrl!);
	const prefix = `sendonce-test:${uniqueName()}:`;
	closers.push(async () => {
		const keys = await client.keys(`${prefix}*`);
		if (keys.length > 0) await client.del(...keys);
		client.disconnect();
	});
	return {client, prefix};
}

describe.skipIf(redisUrl === null)('a rolling deploy: an instance at the previous format and one at this one share a Redis', () => {
	test('a claim sent again after an instance of the previous format took the key over is a 409, not a second holder', async () => {
		const {client, prefix} = redisOnPrefix();
		// The new instance's client, recording what it sends: its claim is sent again later, as a client whose reply was lost would.
		const sent: string[][] = [];
		const recording = {call: async (command: string, ...args: string[]) => {
			sent.push([command, ...args]);
			return client.call(command, ...args);
		}};
		const current = redisKeyStore(recording, {prefix});
		const previous = previousRedisKeyStore(client, {prefix});
		await current.claim('taken-over', {fingerprint: 'f', lease: 50, ttl: 60_000});
		await new Promise(resolve => setTimeout(resolve, 80));
		const takeover = await previous.claim('taken-over', {fingerprint: 'f', lease: 10_000, ttl: 60_000});
		expect(takeover).toMatchObject({state: 'claimed'});
		const [command, ...args] = sent.at(-1)!;
		const again = await client.call(command!, ...args) as string[];
		expect(again[1]).toBe('r');
	});

	test('duplicates racing between them run each key once, and both replay its answer', async () => {
		const {client, prefix} = redisOnPrefix();
		const statuses = await raceBetween([previousRedisKeyStore(client, {prefix}), redisKeyStore(client, {prefix})], 40);
		expect(new Set(statuses)).toEqual(new Set([201, 409]));
	});
});

describe.skipIf(databaseUrl === null)('a rolling deploy: an instance at the previous format and one at this one share a PostgreSQL table', () => {
	/** A table as the previous release made it, with a key it answered and one it holds. */
	async function previousTable() {
		const pool = new pg.Pool({connectionString: databaseUrl!, max: 6});
		const table = `sendonce_test_${uniqueName()}`;
		closers.push(async () => {
			await dropTable(pool, table);
			await pool.end();
		});
		await pool.query(PREVIOUS_TABLE_SQL(table));
		const previous = previousPostgresKeyStore(pool, {table});
		const answered = await previous.claim('answered', {fingerprint: 'f', lease: 10_000, ttl: 60_000}) as {fence: number};
		await previous.complete('answered', {fence: answered.fence, fingerprint: 'f', answer: {status: 201, headers: [['content-type', 'application/json']], body: new TextEncoder().encode('{"id":1}')}, ttl: 60_000});
		await previous.claim('held', {fingerprint: 'f', lease: 10_000, ttl: 60_000});
		return {pool, table, previous};
	}

	// The keys' rows, without the since row (id '') a store of this release adds on first use.
	const rows = async (pool: pg.Pool, table: string) => (await pool.query(`SELECT id, fence::text, status FROM "${table}" WHERE id <> '' ORDER BY id`)).rows as unknown[];

	test.each([true, false])('createTable: %s on the previous table: no ALTER (nothing waits behind a lock taken for it), the table used in the previous format, nothing lost', async createTable => {
		const {pool, table} = await previousTable();
		const before = await rows(pool, table);
		// A transaction open on the table: an ALTER TABLE would wait for it, and every claim behind the ALTER.
		const reader = await pool.connect();
		closers.push(async () => reader.release());
		await reader.query(`BEGIN; SELECT count(*) FROM "${table}"`);
		const current = postgresKeyStore(pool, {table, createTable, cleanupInterval: 0});
		expect(await current.claim('answered', {fingerprint: 'f', lease: 10_000, ttl: 60_000})).toMatchObject({state: 'done', answer: {status: 201}});
		expect(await current.claim('held', {fingerprint: 'f', lease: 10_000, ttl: 60_000})).toMatchObject({state: 'running'});
		expect(await current.claim('new', {fingerprint: 'f', lease: 10_000, ttl: 60_000})).toMatchObject({state: 'claimed'});
		await reader.query('COMMIT');
		expect((await rows(pool, table)).slice(0, 2)).toEqual(before);
		const columns = await pool.query('SELECT column_name FROM information_schema.columns WHERE table_name = $1 AND column_name IN (\'claim\', \'format\')', [table]);
		expect(columns.rows).toEqual([]);
	});

	test('tableSql() brings the previous table up keeping every row; a store started after writes format 2, with its token', async () => {
		const {pool, table} = await previousTable();
		const before = await rows(pool, table);
		await pool.query(tableSql(table));
		expect(await rows(pool, table)).toEqual(before);
		const current = postgresKeyStore(pool, {table, createTable: false, cleanupInterval: 0});
		expect(await current.claim('answered', {fingerprint: 'f', lease: 10_000, ttl: 60_000})).toMatchObject({state: 'done', answer: {status: 201}});
		expect(await current.claim('held', {fingerprint: 'f', lease: 10_000, ttl: 60_000})).toMatchObject({state: 'running'});
		await current.claim('new', {fingerprint: 'f', lease: 10_000, ttl: 60_000});
		expect((await pool.query(`SELECT id, format, claim IS NOT NULL AS token FROM "${table}" WHERE id <> '' ORDER BY id`)).rows).toEqual([
			{id: 'answered', format: null, token: false},
			{id: 'held', format: null, token: false},
			{id: 'new', format: 2, token: true},
		]);
	});

	test('duplicates racing between them run each key once, and both replay its answer', async () => {
		const {pool, table, previous} = await previousTable();
		await pool.query(tableSql(table));
		const statuses = await raceBetween([previous, postgresKeyStore(pool, {table, cleanupInterval: 0})], 30);
		expect(statuses.filter(status => status !== 201 && status !== 409)).toEqual([]);
	});

	test('a token the new instance left on a row the previous one took over never makes the new one a second holder', async () => {
		const {pool, table, previous} = await previousTable();
		await pool.query(tableSql(table));
		const sent: Array<[string, unknown[]]> = [];
		const recording = {query: async (text: string, values?: unknown[]) => {
			sent.push([text, values ?? []]);
			return pool.query(text, values);
		}};
		const current = postgresKeyStore(recording, {table, cleanupInterval: 0});
		await current.claim('taken-over', {fingerprint: 'f', lease: 50, ttl: 60_000});
		await new Promise(resolve => setTimeout(resolve, 80));
		expect(await previous.claim('taken-over', {fingerprint: 'f', lease: 10_000, ttl: 60_000})).toMatchObject({state: 'claimed'});
		// The new instance's claim, sent again late (as after a lost reply): the row keeps its token, under another fence.
		const [text, values] = sent.filter(([statement]) => statement.includes('ON CONFLICT')).at(-1)!;
		const {rows: [again]} = await pool.query(text, values);
		expect(again).toMatchObject({state: 'running'});
	});
});

describe('a compression middleware after the idempotency middleware', () => {
	test('the answer is stored and replayed uncompressed: a retry without Accept-Encoding can read it', async () => {
		const app = express4();
		app.post('/orders', express4.json(), expressIdempotency({store: memoryKeyStore()}), compression({threshold: 0}), (_request, response) => {
			response.status(201).json({id: 1, note: 'x'.repeat(200)});
		});
		const port = Number(new URL(await listen(createServer(app))).port);
		const raw = async (headers: Record<string, string>) => new Promise<{headers: Record<string, unknown>; body: Buffer}>((resolve, reject) => {
			const outgoing = httpRequest({host: '127.0.0.1', port, path: '/orders', method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': 'gzip-1', ...headers}}, incoming => {
				const chunks: Buffer[] = [];
				incoming.on('data', chunk => chunks.push(chunk as Buffer));
				incoming.on('end', () => resolve({headers: incoming.headers, body: Buffer.concat(chunks)}));
			});
			outgoing.on('error', reject);
			outgoing.end('{"item":"book"}');
		});
		const first = await raw({'accept-encoding': 'gzip'});
		const retry = await raw({});
		for (const answer of [first, retry]) {
			expect(answer.headers['content-encoding']).toBeUndefined();
			expect(JSON.parse(answer.body.toString())).toMatchObject({id: 1});
		}

		expect(retry.headers['idempotent-replayed']).toBe('true');
	});
});
