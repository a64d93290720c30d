// The Redis store's check (issue 33), beyond the contract every store passes: it closes a key only
// while its marker (since when Redis has kept every claim) proves no claim of it was lost, so a
// flush, an eviction or a restart moves the marker on; a check sent again answers the same; a
// closed key refuses every claim, an earlier format's too (a rolling deploy); and the keys an
// earlier format wrote read as before.
import {setTimeout as delay} from 'node:timers/promises';
import Redis from 'ioredis';
import {createClient} from 'redis';
import {describe, expect, inject, test} from 'vitest';
import type {KeyStore, StoredAnswer} from '../../src/server.js';
import {redisKeyStore, type RedisClientLike} from '../../src/server/redis.js';
import {redisKeyStore as previousRedisKeyStore} from '../fixtures/previous/redis-a6f9ac2.js';
import {closers} from './servers.js';
import {closeNodeRedis, openNodeRedis, uniqueName} from './stores.js';

const redisUrl = inject('redisUrl');
const TTL = 60_000;
const claim = (lease = 30_000) => ({fingerprint: 'f1', lease, ttl: TTL});
const answer: StoredAnswer = {status: 201, headers: [['content-type', 'application/json']], body: new TextEncoder().encode('{"id":7}')};

/** A store on a prefix of the test's own, what it sent, and its Redis reached past it. */
interface Opened {
	store: KeyStore;
	prefix: string;
	/** Every command the store sent, as sent. */
	sent: string[][];
	/** Sends a raw command past the store. */
	raw(args: string[]): Promise<unknown>;
	/** The client itself, for another store on it. */
	client: RedisClientLike;
}

/** The time now, a little after every earlier write: Redis's clock counts µs, `Date.now()` ms. */
async function later(): Promise<number> {
	await delay(2);
	return Date.now();
}

async function openWith(client: RedisClientLike, raw: (args: string[]) => Promise<unknown>, recording: (sent: string[][]) => RedisClientLike): Promise<Opened> {
	const prefix = `sendonce-test:${uniqueName()}:`;
	closers.push(async () => {
		const keys = await raw(['KEYS', `${prefix}*`]) as string[];
		if (keys.length > 0) await raw(['DEL', ...keys]);
	});
	const sent: string[][] = [];
	const store = redisKeyStore(recording(sent), {prefix});
	// Its marker, sent as it was made, written before the test's first key.
	await raw(['PING']);
	return {store, prefix, sent, raw, client};
}

const clients = [
	{
		name: 'node-redis',
		async open(): Promise<Opened> {
			const client = await openNodeRedis();
			closers.push(async () => closeNodeRedis(client));
			const raw = async (args: string[]) => client.sendCommand(args);
			return openWith(client, raw, sent => ({sendCommand: async (args: string[]) => (sent.push(args), client.sendCommand(args))}));
		},
	},
	{
		name: 'ioredis',
		async open(): Promise<Opened> {
			const client = new Redis(redisUrl!);
			closers.push(async () => client.disconnect());
			const raw = async ([command, ...args]: string[]) => client.call(command!, ...args);
			return openWith(client, raw, sent => ({call: async (command: string, ...args: string[]) => (sent.push([command, ...args]), client.call(command, ...args))}));
		},
	},
];

describe.skipIf(redisUrl === null).each(clients)('the Redis store\'s check, through $name', ({open}) => {
	test('a flush (the marker and a claim deleted, as FLUSHDB would) makes a key made before it unknown, never closed; the marker moves to then', async () => {
		const {store, prefix, raw} = await open();
		const made = await later();
		expect(await store.claim('made-before', claim())).toMatchObject({state: 'claimed'});
		// Only this test's keys: other tests share the server.
		await raw(['DEL', `${prefix}made-before`, prefix]);
		expect(await store.check!('made-before', {from: made, ttl: TTL})).toEqual({state: 'unknown'});
		expect(await store.check!('never-claimed', {from: made, ttl: TTL})).toEqual({state: 'unknown'});
		expect(await raw(['EXISTS', `${prefix}never-claimed`])).toBe(0);
		// Left open: the claim that may have been lost can be made again.
		expect(await store.claim('made-before', claim())).toMatchObject({state: 'claimed'});
		// A key made since the check that found the marker gone is closed.
		expect(await store.check!('made-after', {from: await later(), ttl: TTL})).toEqual({state: 'closed'});
	});

	test('a store made on a flushed Redis remembers from when it was made, not before', async () => {
		const {prefix, raw, client} = await open();
		const made = await later();
		await raw(['DEL', prefix]);
		const next = redisKeyStore(client, {prefix});
		await raw(['PING']);
		expect(await next.check!('made-before', {from: made, ttl: TTL})).toEqual({state: 'unknown'});
		expect(await next.check!('made-after', {from: await later(), ttl: TTL})).toEqual({state: 'closed'});
	});

	test('a check sent again (its nonce the same) answers the same: closed where it closed the key, unknown where it wrote nothing', async () => {
		const {store, prefix, sent, raw} = await open();
		expect(await store.check!('resent', {from: await later(), ttl: TTL})).toEqual({state: 'closed'});
		const closing = sent.at(-1)!;
		// EVALSHA sha 2 key marker nonce from ttl.
		expect(closing.slice(2, 5)).toEqual(['2', `${prefix}resent`, prefix]);
		expect(await raw(closing)).toEqual([closing[5], 'x']);
		expect(await store.check!('resent', {from: Date.now(), ttl: TTL})).toEqual({state: 'closed'});

		expect(await store.check!('resent-unknown', {from: Date.now() - 30 * 24 * 3_600_000, ttl: 40 * 24 * 3_600_000})).toEqual({state: 'unknown'});
		const unknown = sent.at(-1)!;
		expect(await raw(unknown)).toEqual([unknown[5], 'u']);
		expect(await raw(['EXISTS', `${prefix}resent-unknown`])).toBe(0);
	});

	test('keys evicted since the marker was written (its count of evictions not INFO\'s): the marker moves to now, and a key made before is unknown', async () => {
		const {store, prefix, raw} = await open();
		const made = await later();
		expect(await store.check!('before-eviction-control', {from: made, ttl: TTL})).toEqual({state: 'closed'});
		const [since] = await raw(['HMGET', prefix, 'since']) as [string];
		// As if Redis evicted a key since: INFO's `evicted_keys` is now more than the marker's.
		await raw(['HSET', prefix, 'evicted', '-1']);
		expect(await store.check!('before-eviction', {from: made, ttl: TTL})).toEqual({state: 'unknown'});
		expect(await raw(['EXISTS', `${prefix}before-eviction`])).toBe(0);
		const [moved, evicted] = await raw(['HMGET', prefix, 'since', 'evicted']) as [string, string];
		expect(Number(moved)).toBeGreaterThan(Number(since));
		expect(evicted).toMatch(/^\d+$/);
		expect(await store.check!('after-eviction', {from: await later(), ttl: TTL})).toEqual({state: 'closed'});
	});

	test('a restart since the marker was written (another run_id: a snapshot older than the last writes, a promoted replica): the marker moves to now', async () => {
		const {store, prefix, raw} = await open();
		const made = await later();
		await raw(['HSET', prefix, 'run_id', 'feedface']);
		expect(await store.check!('before-restart', {from: made, ttl: TTL})).toEqual({state: 'unknown'});
		expect(await store.check!('after-restart', {from: await later(), ttl: TTL})).toEqual({state: 'closed'});
	});

	test('a closed key refuses every claim, renew, complete and release change nothing of it, and it is kept ttl', async () => {
		const {store, prefix, raw} = await open();
		expect(await store.check!('closed', {from: await later(), ttl: TTL})).toEqual({state: 'closed'});
		const kept = await raw(['HGETALL', `${prefix}closed`]);
		expect(await store.claim('closed', claim())).toEqual({state: 'closed'});
		expect(await store.renew('closed', {fence: 0, lease: 30_000, ttl: TTL})).toBe(false);
		expect(await store.complete('closed', {fence: 0, fingerprint: '', answer, ttl: TTL})).toBe(false);
		await store.release('closed', {fence: 0});
		expect(await raw(['HGETALL', `${prefix}closed`])).toEqual(kept);
		const left = Number(await raw(['PTTL', `${prefix}closed`]));
		expect(left).toBeGreaterThan(TTL - 5000);
		expect(left).toBeLessThanOrEqual(TTL);
	});

	test('an instance of the previous format (a rolling deploy) finds a closed key held, and runs nothing', async () => {
		const {store, prefix, client} = await open();
		expect(await store.check!('closed-for-all', {from: await later(), ttl: TTL})).toEqual({state: 'closed'});
		const previous = previousRedisKeyStore(client, {prefix});
		expect(await previous.claim('closed-for-all', claim())).toMatchObject({state: 'running'});
		expect(await previous.renew('closed-for-all', {fence: 0, lease: 30_000, ttl: TTL})).toBe(false);
		expect(await store.claim('closed-for-all', claim())).toEqual({state: 'closed'});
		expect(await store.check!('closed-for-all', {from: Date.now(), ttl: TTL})).toEqual({state: 'closed'});
	});

	test('keys the previous format wrote (without `v`) read as before: answered, running, released, a lease run out', async () => {
		const {store, prefix, client} = await open();
		const previous = previousRedisKeyStore(client, {prefix});
		const done = await previous.claim('old-done', claim()) as {fence: number};
		expect(await previous.complete('old-done', {fence: done.fence, fingerprint: 'f1', answer, ttl: TTL})).toBe(true);
		const found = await store.check!('old-done', {from: Date.now(), ttl: TTL});
		expect(found).toMatchObject({state: 'done', fingerprint: 'f1', answer: {status: 201, headers: answer.headers}});
		expect(found.state === 'done' && new TextDecoder().decode(found.answer.body)).toBe('{"id":7}');

		await previous.claim('old-running', claim());
		expect(await store.check!('old-running', {from: Date.now(), ttl: TTL})).toMatchObject({state: 'running', leaseLeft: expect.any(Number) as number});

		const released = await previous.claim('old-released', claim()) as {fence: number};
		await previous.release('old-released', {fence: released.fence});
		expect(await store.check!('old-released', {from: Date.now(), ttl: TTL})).toEqual({state: 'released'});

		await previous.claim('old-lease-out', claim(100));
		await delay(150);
		expect(await store.check!('old-lease-out', {from: Date.now(), ttl: TTL})).toEqual({state: 'released'});
	});
});

describe.skipIf(redisUrl === null)('the Redis store\'s check where Redis will not say what it kept', () => {
	test('a user whose ACL refuses INFO (as one without @dangerous does): every key no claim touched is unknown, and claims work', async () => {
		const admin = await openNodeRedis();
		closers.push(async () => closeNodeRedis(admin));
		const user = `sendonce-test-${uniqueName()}`;
		const prefix = `sendonce-test:${uniqueName()}:`;
		await admin.sendCommand(['ACL', 'SETUSER', user, 'on', '>secret', `~${prefix}*`, '+@all', '-info']);
		closers.push(async () => {
			await admin.sendCommand(['ACL', 'DELUSER', user]);
			const keys = await admin.sendCommand(['KEYS', `${prefix}*`]) as string[];
			if (keys.length > 0) await admin.sendCommand(['DEL', ...keys]);
		});
		const url = new URL(redisUrl!);
		url.username = user;
		url.password = 'secret';
		const client = createClient({url: url.toString()});
		await client.connect();
		closers.push(async () => closeNodeRedis(client));
		const store = redisKeyStore(client, {prefix});
		await client.ping();
		expect(await store.check!('never', {from: await later(), ttl: TTL})).toEqual({state: 'unknown'});
		expect(await admin.sendCommand(['EXISTS', prefix, `${prefix}never`])).toBe(0);
		expect(await store.claim('never', claim())).toMatchObject({state: 'claimed'});
		expect(await store.check!('never', {from: Date.now(), ttl: TTL})).toMatchObject({state: 'running'});
	});
});

describe.skipIf(redisUrl === null)('the Redis store\'s check on Redis Cluster', () => {
	test('where Redis refuses the key and the marker together (two slots: CROSSSLOT), the check is sent again without the marker: a key\'s hash is read as ever, a key with none is unknown', async () => {
		const client = await openNodeRedis();
		const prefix = `sendonce-test:${uniqueName()}:`;
		closers.push(async () => {
			const keys = await client.sendCommand(['KEYS', `${prefix}*`]) as string[];
			if (keys.length > 0) await client.sendCommand(['DEL', ...keys]);
			closeNodeRedis(client);
		});
		// A cluster node: a call on keys of two slots is refused before it runs.
		const refused: string[][] = [];
		const node = {sendCommand: async (args: string[]) => {
			if (args[0]!.startsWith('EVAL') && Number(args[2]) > 1) {
				refused.push(args);
				throw new Error('CROSSSLOT Keys in request don\'t hash to the same slot');
			}

			return client.sendCommand(args);
		}};
		const store = redisKeyStore(node, {prefix});
		await client.ping();
		const {fence} = await store.claim('answered', claim()) as {fence: number};
		await store.complete('answered', {fence, fingerprint: 'f1', answer, ttl: TTL});
		expect(await store.check!('answered', {from: Date.now(), ttl: TTL})).toMatchObject({state: 'done', fingerprint: 'f1', answer: {status: 201}});
		expect(await store.check!('never', {from: await later(), ttl: TTL})).toEqual({state: 'unknown'});
		expect(await client.sendCommand(['EXISTS', `${prefix}never`])).toBe(0);
		expect(await store.claim('never', claim())).toMatchObject({state: 'claimed'});
		// Each refused once, not sent again as a call whose fate is unknown.
		expect(refused.map(args => args.slice(2, 5))).toEqual([['2', `${prefix}answered`, prefix], ['2', `${prefix}never`, prefix]]);
	});
});
