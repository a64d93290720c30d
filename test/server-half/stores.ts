import {randomBytes} from 'node:crypto';
// The default export: ioredis exports `Redis` by name only from 5.3 on.
import Redis from 'ioredis';
import pg from 'pg';
import {createClient} from 'redis';
import {inject} from 'vitest';
import {memoryKeyStore} from '../../src/server.js';
import type {KeyStore} from '../../src/server.js';
import {postgresKeyStore} from '../../src/server/postgres.js';
import {redisKeyStore} from '../../src/server/redis.js';

/** A store under test, on its own keys or table, and how to let it go. */
export interface OpenStore {
	store: KeyStore;
	close(): Promise<void>;
}

/** One kind of store: real engines are skipped (with one line from the global set-up) when absent. */
export interface StoreKind {
	name: 'memory' | 'redis (node-redis)' | 'redis (ioredis)' | 'postgres';
	/** Memory runs on `Date.now()`, which fake timers move; the engines keep their own clocks. */
	fakeClock: boolean;
	available: boolean;
	/** Opens the store on fresh keys (or `names`, to share them with a server process). */
	open(names?: {prefix?: string; table?: string}): Promise<OpenStore>;
}

/** Unique per run and per store, so that parallel runs and files never meet. */
export function uniqueName(): string {
	return `${process.pid}_${randomBytes(4).toString('hex')}`;
}

export async function openNodeRedis() {
	const client = createClient({url: inject('redisUrl')!});
	await client.connect();
	return client;
}

/** Closes a node-redis client of any major the store supports: v4 has `disconnect()` but no `destroy()`. */
export function closeNodeRedis(client: {destroy?: () => void; disconnect(): Promise<void>}): void {
	if (client.destroy) client.destroy();
	else void client.disconnect();
}

export function openPool(): pg.Pool {
	return new pg.Pool({connectionString: inject('databaseUrl')!, max: 10});
}

/** Drops the table a Postgres store made. */
export async function dropTable(pool: pg.Pool, table: string): Promise<void> {
	await pool.query(`DROP TABLE IF EXISTS "${table}"`);
}

export const storeKinds: StoreKind[] = [
	{
		name: 'memory',
		fakeClock: true,
		available: true,
		async open() {
			return {store: memoryKeyStore(), close: async () => undefined};
		},
	},
	{
		name: 'redis (node-redis)',
		fakeClock: false,
		available: inject('redisUrl') !== null,
		async open(names) {
			const prefix = names?.prefix ?? `sendonce-test:${uniqueName()}:`;
			const client = await openNodeRedis();
			const store = redisKeyStore(client, {prefix});
			// The store's first command, its marker (since when Redis keeps every claim), done before a
			// test makes its first key: a check closes only a key made since.
			await client.ping();
			return {
				store,
				async close() {
					for await (const keys of client.scanIterator({MATCH: `${prefix}*`})) if (keys.length > 0) await client.del(keys);
					closeNodeRedis(client);
				},
			};
		},
	},
	{
		name: 'redis (ioredis)',
		fakeClock: false,
		available: inject('redisUrl') !== null,
		async open(names) {
			const prefix = names?.prefix ?? `sendonce-test:${uniqueName()}:`;
			const client = new Redis(inject('redisUrl')!);
			const store = redisKeyStore(client, {prefix});
			await client.ping();
			return {
				store,
				async close() {
					const keys = await client.keys(`${prefix}*`);
					if (keys.length > 0) await client.del(...keys);
					client.disconnect();
				},
			};
		},
	},
	{
		name: 'postgres',
		fakeClock: false,
		available: inject('databaseUrl') !== null,
		async open(names) {
			const table = names?.table ?? `sendonce_test_${uniqueName()}`;
			const pool = openPool();
			const store = postgresKeyStore(pool, {table});
			// First used as it is opened, as memory's store is made: its table made, and the moment
			// from which it remembers every claim (which a check can close a key made since) set.
			await store.check!('opened', {from: 0, ttl: 1});
			return {
				store,
				async close() {
					await dropTable(pool, table);
					await pool.end();
				},
			};
		},
	},
];
