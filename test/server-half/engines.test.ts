import {readFileSync} from 'node:fs';
import {fileURLToPath} from 'node:url';
import type pg from 'pg';
import {afterAll, beforeAll, describe, expect, inject, onTestFinished, test} from 'vitest';
import {Kysely, PostgresDialect} from 'kysely';
import {memoryKeyStore, toNodeHandler} from '../../src/server.js';
import {kyselyTransactional} from '../../src/server/kysely.js';
import {postgresKeyStore, postgresTransactional, tableSql} from '../../src/server/postgres.js';
import {redisKeyStore} from '../../src/server/redis.js';
import {closeNodeRedis, dropTable, openNodeRedis, openPool, uniqueName} from './stores.js';

const claim = (lease = 30_000) => ({fingerprint: 'f', lease, ttl: 60_000});

describe('what the store factories accept', () => {
	test.each([
		[null, 'null'],
		[{}, 'an object without `call` or `sendCommand`'],
		['redis://localhost', 'string'],
	])('redisKeyStore(%o) names what it expected', (client, got) => {
		expect(() => redisKeyStore(client as never)).toThrow(new TypeError(`Expected \`client\` to be a node-redis (v4, v5, v6) or ioredis client, got ${got}`));
	});

	test('redisKeyStore sends node-redis clients raw commands as arrays and ioredis clients through call()', async () => {
		const sent: unknown[] = [];
		await redisKeyStore({sendCommand: async (args: string[]) => (sent.push(args), [args[4], 'c', '1'])}).claim('k', claim());
		await redisKeyStore({call: async (...args: string[]) => (sent.push(args), [args[4], 'c', '1']), sendCommand: () => undefined} as never).claim('k', claim());
		// Each store sends its marker (at the prefix alone) as it is made, then the claim.
		const call = (key: string) => ['EVALSHA', expect.stringMatching(/^[\da-f]{40}$/), '1', key];
		expect(sent.map(args => (args as string[]).slice(0, 4))).toEqual([call('sendonce:'), call('sendonce:k'), call('sendonce:'), call('sendonce:k')]);
	});

	test('redisKeyStore believes no reply that is not to its own call: a client that pairs replies with the wrong commands is caught, and the call sent again with its nonce', async () => {
		// What node-redis was seen doing after a connection reset, against Redis 7.0: the handshake's
		// error reply, then each reply one command late.
		const replies: unknown[] = [new Error('ERR unknown subcommand \'SETINFO\'')];
		const sent: string[] = [];
		const shifted = {sendCommand: async (args: string[]) => {
			// The marker, sent as the store is made, is answered in turn: the shift starts after it.
			if (args[3] === 'sendonce:') return [args[4], ''];
			sent.push(`${args[3]} ${args[4]}`);
			replies.push([args[4], 'c', '1796180000000000']);
			const reply = replies.shift();
			if (reply instanceof Error) throw reply;
			return reply;
		}};
		const store = redisKeyStore(shifted);
		// An error Redis answered is the call's fate: not sent again.
		await expect(store.claim('a', claim())).rejects.toThrow('SETINFO');
		expect(sent).toHaveLength(1);
		// The reply to `a` is not believed for `b`; `b` sent again with its nonce gets its own.
		expect(await store.claim('b', claim())).toEqual({state: 'claimed', fence: 1_796_180_000_000_000});
		expect(sent.slice(1)).toEqual([sent[1], sent[1]]);
		expect(sent[1]).toMatch(/^sendonce:b /);

		const strange = {sendCommand: async () => ['another-nonce', 'c', '1']};
		await expect(redisKeyStore(strange).claim('c', claim())).rejects.toThrow(/^sendonce\/server\/redis: the Redis client answered a call on "sendonce:c" with a reply to another command/);
	});

	test.each([
		[{table: 'drop table x;'}, /^Expected `table` to be a table name, optionally with its schema/],
		[{table: 'a.b.c'}, /^Expected `table` to be a table name/],
		[{createTable: 'yes'}, /^Expected `createTable` to be a boolean/],
		[{cleanupInterval: -1}, /^Expected `cleanupInterval` to be a non-negative integer/],
		[{cleanupBatch: 0}, /^Expected `cleanupBatch` to be a positive integer/],
		[{cleanupLimit: 100}, /^Unknown option `cleanupLimit`: cleanup now deletes every expired row/],
		[{nope: 1}, /^Unknown option `nope`; expected one of table, createTable, cleanupInterval, cleanupBatch$/],
	])('postgresKeyStore(pool, %o) throws a TypeError', (options, message) => {
		expect(() => postgresKeyStore({query: async () => ({rows: []})}, options as never)).toThrow(TypeError);
		expect(() => postgresKeyStore({query: async () => ({rows: []})}, options as never)).toThrow(message);
	});

	test.each([
		['memoryKeyStore', () => memoryKeyStore({nope: 1} as never), /^Unknown option `nope`; expected one of now$/],
		['redisKeyStore', () => redisKeyStore({sendCommand: async () => null}, {prefx: 'a:'} as never), /^Unknown option `prefx`; expected one of prefix$/],
		['postgresTransactional', () => postgresTransactional({query: async () => ({rows: []}), connect: async () => ({query: async () => ({rows: []}), release() {}})}, {wiat: 10} as never), /^Unknown option `wiat`; expected one of table, createTable, wait, cleanupInterval, cleanupBatch$/],
		['kyselyTransactional', () => kyselyTransactional(new Kysely({dialect: new PostgresDialect({pool: async () => openPool()})}), {table: 'ok', tabel: 'x'} as never), /^Unknown option `tabel`/],
		['toNodeHandler', () => toNodeHandler(async () => new Response(), {onErorr: () => undefined} as never), /^Unknown option `onErorr`; expected one of onError$/],
	])('%s refuses an unknown option, naming it', (_, make, message) => {
		expect(make).toThrow(TypeError);
		expect(make).toThrow(message);
	});

	test('postgresTransactional and kyselyTransactional refuse what is not a pool or a Kysely', () => {
		expect(() => postgresTransactional({query: async () => ({rows: []})} as never)).toThrow(/^Expected `pool` to be a pg Pool \(an object with `connect` and `query`\)/);
		expect(() => kyselyTransactional({} as never)).toThrow(/^Expected `db` to be a Kysely instance, got object/);
		expect(() => postgresTransactional({query: async () => ({rows: []}), connect: async () => ({query: async () => ({rows: []}), release() {}})}, {wait: 0})).toThrow(/^Expected `wait` to be a positive integer, got 0/);
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
		// The claims' commands (not the marker's, sent as the store is made).
		const store = redisKeyStore({sendCommand: async (args: string[]) => (args[3] === `${prefix}k` && sent.push(args[0]!), client.sendCommand(args))}, {prefix});
		try {
			await client.sendCommand(['SCRIPT', 'FLUSH']);
			expect(await store.claim('k', claim())).toMatchObject({state: 'claimed'});
			expect(await store.claim('k', claim())).toMatchObject({state: 'running', fingerprint: 'f'});
			expect(sent).toEqual(['EVALSHA', 'EVAL', 'EVALSHA']);
		} finally {
			await client.del([`${prefix}k`, prefix]);
			closeNodeRedis(client);
		}
	});
});

describe.skipIf(inject('redisUrl') === null)('redisKeyStore and the keys an earlier sendonce left', () => {
	test('a key written as a string (the format before fences) is refused with a message naming it and what to do', async () => {
		const client = await openNodeRedis();
		const prefix = `sendonce-test:${uniqueName()}:`;
		onTestFinished(async () => {
			await client.del([`${prefix}old`, prefix]);
			closeNodeRedis(client);
		});
		await client.set(`${prefix}old`, 'running:f:token', {PX: 60_000});
		await expect(redisKeyStore(client, {prefix}).claim('old', claim())).rejects.toThrow(`sendonce/server/redis: "${prefix}old" is not a hash: it was written by an earlier sendonce`);
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
		expect(await store.claim('k', claim())).toMatchObject({state: 'claimed'});
		expect(await exists(name)).toBe(true);

		const docs = readFileSync(fileURLToPath(new URL('../../docs/server.md', import.meta.url)), 'utf8');
		expect(docs).toContain(tableSql());
	});

	test('sixteen processes starting at once all find the table made, none fails making it', async () => {
		const name = table();
		const pools = Array.from({length: 16}, () => openPool());
		try {
			// Connected first, so that the sixteen statements reach the server together.
			await Promise.all(pools.map(async own => own.query('SELECT 1')));
			const results = await Promise.all(pools.map(async (own, index) => postgresKeyStore(own, {table: name}).claim(`k-${index}`, claim())));
			expect(results.map(result => result.state)).toEqual(Array.from({length: 16}, () => 'claimed'));
		} finally {
			await Promise.all(pools.map(async own => own.end()));
		}
	});

	test('createTable: false uses the table as it is, and fails plainly when it is missing', async () => {
		const name = table();
		await expect(postgresKeyStore(pool, {table: name, createTable: false}).claim('k', claim())).rejects.toThrow(`relation "${name}" does not exist`);
		await pool.query(tableSql(name));
		expect(await postgresKeyStore(pool, {table: name, createTable: false}).claim('k', claim())).toMatchObject({state: 'claimed'});
	});

	test('a table an earlier sendonce made (without fences) is named as such, not as a missing column', async () => {
		const name = table();
		await pool.query(`CREATE TABLE "${name}" (id text PRIMARY KEY, fingerprint text NOT NULL, token text, status smallint, headers jsonb, body bytea, expires_at timestamptz NOT NULL)`);
		await expect(postgresKeyStore(pool, {table: name}).claim('k', claim())).rejects.toThrow(`the table "${name}" has the columns of an earlier sendonce`);
	});

	test('a claim starts a cleanup that deletes every expired row, batch after batch, and keeps live ones; the next waits cleanupInterval', async () => {
		const name = table();
		const setup = postgresKeyStore(pool, {table: name, cleanupInterval: 0});
		for (let index = 0; index < 25; index++) await setup.claim(`old-${index}`, claim());
		await setup.claim('live', claim());
		await pool.query(`UPDATE "${name}" SET expires_at = now() - interval '1 minute' WHERE id LIKE 'old-%'`);
		// The since row (id '') never expires: no cleanup deletes it.
		const ids = async () => (await pool.query(`SELECT id FROM "${name}" ORDER BY id`)).rows.map(row => row.id as string);

		const store = postgresKeyStore(pool, {table: name, cleanupBatch: 10});
		await store.claim('new', claim());
		await expect.poll(ids).toEqual(['', 'live', 'new']);

		// Within the interval, a claim starts no cleanup.
		await pool.query(`UPDATE "${name}" SET expires_at = now() - interval '1 minute' WHERE id = 'live'`);
		await store.claim('newer', claim());
		await store.claim('newest', claim());
		expect(await ids()).toEqual(['', 'live', 'new', 'newer', 'newest']);
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
		// The since row (id '') never expires, so the DELETE keeps it: checks still know since when the table remembers.
		expect((await pool.query(`SELECT id FROM "${name}" ORDER BY id`)).rows).toEqual([{id: ''}, {id: 'live'}]);
	});
});
