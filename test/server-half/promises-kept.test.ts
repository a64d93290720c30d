// Issue 30: adapters and stores that keep every promise. Each test failed on a6f9ac2.
import {createServer, request as httpRequest} from 'node:http';
import compression from 'compression';
import express4 from 'express';
import Redis from 'ioredis';
import pg from 'pg';
import {describe, expect, inject, test} from 'vitest';
import {expressIdempotency, idempotency, memoryKeyStore} from '../../src/server.js';
import {postgresTransactional} from '../../src/server/postgres.js';
import {redisKeyStore} from '../../src/server/redis.js';
import {TcpFaultProxy} from '../faults/tcp-fault-proxy.js';
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
describe.skipIf(redisUrl === null)('Redis: a command sent again after its reply was lost changes nothing', () => {
	async function throughProxy() {
		const {hostname, port} = new URL(redisUrl!);
		const proxy = await new TcpFaultProxy({host: hostname, port: Number(port || 6379)}).listen();
		// ioredis's defaults: a command whose reply was lost with the connection is sent again once it reconnects.
		const client = new Redis({host: '127.0.0.1', port: proxy.port, retryStrategy: () => 10, lazyConnect: true});
		client.on('error', () => undefined);
		await client.connect();
		const prefix = `sendonce-test:${uniqueName()}:`;
		closers.push(async () => {
			client.disconnect();
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
		const runs = new Map<string, number>();
		const route = async (request: Request) => {
			const key = request.headers.get('idempotency-key')!;
			runs.set(key, (runs.get(key) ?? 0) + 1);
			await new Promise(resolve => setTimeout(resolve, 5));
			return Response.json({key}, {status: 201});
		};
		const instances = [idempotency({store: previousRedisKeyStore(client, {prefix}), lease: 2000})(route), idempotency({store: redisKeyStore(client, {prefix}), lease: 2000})(route)];
		const keys = Array.from({length: 40}, (_, index) => `mixed-${index}`);
		const statuses = await Promise.all(keys.flatMap(key => [0, 1, 0, 1].map(async (instance, index) => (await instances[(instance + keys.indexOf(key) + index) % 2]!(order(key))).status)));
		expect(new Set(statuses)).toEqual(new Set([201, 409]));
		expect([...runs.values()].every(count => count === 1)).toBe(true);
		expect(runs.size).toBe(keys.length);
		for (const instance of instances) {
			const replay = await instance(order('mixed-7'));
			expect(replay.headers.get('idempotent-replayed')).toBe('true');
			expect(await replay.json()).toEqual({key: 'mixed-7'});
		}
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
