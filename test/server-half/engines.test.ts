import {randomUUID} from 'node:crypto';
import {readFileSync} from 'node:fs';
import {fileURLToPath} from 'node:url';
import type pg from 'pg';
import {afterAll, beforeAll, describe, expect, inject, test} from 'vitest';
import {postgresKeyStore, tableSql} from '../../src/server/postgres.js';
import {redisKeyStore} from '../../src/server/redis.js';
import {dropTable, openNodeRedis, openPool, uniqueName} from './stores.js';

const claim = (lease = 30_000) => ({fingerprint: 'f', token: randomUUID(), lease});

describe('what the store factories accept', () => {
	test.each([
		[null, 'null'],
		[{}, 'an object without `call` or `sendCommand`'],
		['redis://localhost', 'string'],
	])('redisKeyStore(%o) names what it expected', (client, got) => {
		expect(() => redisKeyStore(client as never)).toThrow(new TypeError(`Expected \`client\` to be a node-redis (v4, v5) or ioredis client, got ${got}`));
	});

	test('redisKeyStore sends node-redis clients raw commands as arrays and ioredis clients through call()', async () => {
		const sent: unknown[] = [];
		await redisKeyStore({sendCommand: async (args: string[]) => (sent.push(args), null)}).claim('k', claim());
		await redisKeyStore({call: async (...args: string[]) => (sent.push(args), null), sendCommand: () => undefined} as never).claim('k', claim());
		expect(sent.map(args => (args as string[]).slice(0, 4))).toEqual([['EVALSHA', expect.stringMatching(/^[\da-f]{40}$/), '1', 'sendonce:k'], ['EVALSHA', expect.stringMatching(/^[\da-f]{40}$/), '1', 'sendonce:k']]);
	});

	test.each([
		[{table: 'drop table x;'}, /^Expected `table` to be a table name, optionally with its schema/],
		[{table: 'a.b.c'}, /^Expected `table` to be a table name/],
		[{createTable: 'yes'}, /^Expected `createTable` to be a boolean/],
		[{cleanupLimit: -1}, /^Expected `cleanupLimit` to be a non-negative integer/],
	])('postgresKeyStore(pool, %o) throws a TypeError', (options, message) => {
		expect(() => postgresKeyStore({query: async () => ({rows: []})}, options as never)).toThrow(message);
	});

	test('postgresKeyStore refuses what is not a pool', () => {
		expect(() => postgresKeyStore({} as never)).toThrow(/^Expected `pool` to be a pg Pool or Client \(an object with `query`\), got object/);
	});
});

describe.skipIf(inject('redisUrl') === null)('redisKeyStore on a real Redis', () => {
	test('after SCRIPT FLUSH (a restarted Redis) the scripts are sent again and the claim works', async () => {
		const client = await openNodeRedis();
		const prefix = `sendonce-test:${uniqueName()}:`;
		const sent: string[] = [];
		const store = redisKeyStore({sendCommand: async (args: string[]) => (sent.push(args[0]!), client.sendCommand(args))}, {prefix});
		try {
			await client.sendCommand(['SCRIPT', 'FLUSH']);
			expect(await store.claim('k', claim())).toEqual({state: 'claimed'});
			expect(await store.claim('k', claim())).toMatchObject({state: 'running', fingerprint: 'f'});
			expect(sent).toEqual(['EVALSHA', 'EVAL', 'EVALSHA']);
		} finally {
			await client.del(`${prefix}k`);
			client.destroy();
		}
	});
});

describe.skipIf(inject('databaseUrl') === null)('postgresKeyStore on a real PostgreSQL', () => {
	let pool: pg.Pool;
	const tables: string[] = [];
	const table = () => {
		const name = `sendonce_test_${uniqueName()}`;
		tables.push(name);
		return name;
	};

	beforeAll(() => {
		pool = openPool();
	});
	afterAll(async () => {
		for (const name of tables) await dropTable(pool, name);
		await pool.end();
	});

	const exists = async (name: string) => (await pool.query('SELECT to_regclass($1) AS found', [name])).rows[0].found !== null;

	test('creates its table on first use, with the SQL docs/server.md shows', async () => {
		const name = table();
		const store = postgresKeyStore(pool, {table: name});
		expect(await exists(name)).toBe(false);
		expect(await store.claim('k', claim())).toEqual({state: 'claimed'});
		expect(await exists(name)).toBe(true);

		const docs = readFileSync(fileURLToPath(new URL('../../docs/server.md', import.meta.url)), 'utf8');
		expect(docs).toContain(tableSql());
	});

	test('createTable: false uses the table as it is, and fails plainly when it is missing', async () => {
		const name = table();
		await expect(postgresKeyStore(pool, {table: name, createTable: false}).claim('k', claim())).rejects.toThrow(`relation "${name}" does not exist`);
		await pool.query(tableSql(name));
		expect(await postgresKeyStore(pool, {table: name, createTable: false}).claim('k', claim())).toEqual({state: 'claimed'});
	});

	test('a claim deletes expired rows, at most cleanupLimit of them, and keeps live ones', async () => {
		const name = table();
		const setup = postgresKeyStore(pool, {table: name, cleanupLimit: 0});
		for (let index = 0; index < 5; index++) await setup.claim(`old-${index}`, claim());
		await setup.claim('live', claim());
		await pool.query(`UPDATE "${name}" SET expires_at = now() - interval '1 minute' WHERE id LIKE 'old-%'`);

		await postgresKeyStore(pool, {table: name, cleanupLimit: 3}).claim('new', claim());
		const left = (await pool.query(`SELECT id FROM "${name}" ORDER BY id`)).rows.map(row => row.id as string);
		expect(left.filter(id => id.startsWith('old-'))).toHaveLength(2);
		expect(left).toEqual(expect.arrayContaining(['live', 'new']));
	});

	test("the docs' cron DELETE removes every expired row and nothing else", async () => {
		const name = table();
		const store = postgresKeyStore(pool, {table: name});
		await store.claim('expired', claim());
		await store.claim('live', claim());
		await pool.query(`UPDATE "${name}" SET expires_at = now() - interval '1 second' WHERE id = 'expired'`);

		const docs = readFileSync(fileURLToPath(new URL('../../docs/server.md', import.meta.url)), 'utf8');
		const cron = /DELETE FROM "sendonce_idempotency_keys" WHERE expires_at < now\(\);/.exec(docs)?.[0];
		expect(cron).toBeDefined();
		await pool.query(cron!.replace('sendonce_idempotency_keys', name));
		expect((await pool.query(`SELECT id FROM "${name}"`)).rows).toEqual([{id: 'live'}]);
	});
});
