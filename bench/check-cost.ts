/*
 * `npm run bench -- --checks`: what a check of a key (docs/server-contract.md, "Checking a key")
 * costs the server, beside a replay of the same key, in this process through `idempotency()`'s
 * Fetch handler (no HTTP: the store's round trips are what differ). Per store: a replay of an
 * answered key, a check of it (`done`: one read), and a check of a key never sent (`closed`: one
 * read and one write), sequential, in interleaved blocks, `rounds` rounds; median per call and
 * the spread of the rounds' medians. Redis and PostgreSQL at REDIS_URL and DATABASE_URL.
 */
import {randomBytes, randomUUID} from 'node:crypto';
import pg from 'pg';
import {createClient} from 'redis';
import {idempotency, memoryKeyStore, type AnyKeyStore} from '../src/server.js';
import {postgresKeyStore, postgresTransactional} from '../src/server/postgres.js';
import {redisKeyStore} from '../src/server/redis.js';
import {median, spread, type Spread} from './stats.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

type Kind = 'replay' | 'check done' | 'check closed';

export interface CheckCostRow {
	store: string;
	/** Per call, ms: the median of the rounds' medians, and their spread. */
	costs: Record<Kind, Spread>;
}

const request = (key: string, check?: number) => new Request('http://api.test/orders', {
	method: 'POST',
	headers: check === undefined ? {'content-type': 'application/json', 'idempotency-key': key} : {'idempotency-key': key, 'idempotency-check': `created=${check}`},
	...(check === undefined ? {body: '{"order":1}'} : {}),
});

async function measure(name: string, store: AnyKeyStore, {rounds, calls}: {rounds: number; calls: number}): Promise<CheckCostRow> {
	const handle = idempotency({store, clockSkew: 0})(async () => Response.json({ok: true}, {status: 201}));
	await new Promise(resolve => setTimeout(resolve, 5));
	const answered = randomUUID();
	if ((await handle(request(answered))).status !== 201) throw new Error(`${name}: the first request failed`);
	const created = Date.now();
	const runs: Record<Kind, number[]> = {replay: [], 'check done': [], 'check closed': []};
	const one: Record<Kind, () => Request> = {
		replay: () => request(answered),
		'check done': () => request(answered, created),
		'check closed': () => request(randomUUID(), Date.now()),
	};
	const expected: Record<Kind, string | null> = {replay: null, 'check done': 'done', 'check closed': 'closed'};
	for (let round = 0; round < rounds; round++) {
		const times: Record<Kind, number[]> = {replay: [], 'check done': [], 'check closed': []};
		for (let block = 0; block < calls; block += 50) {
			for (const kind of Object.keys(one) as Kind[]) {
				for (let index = 0; index < 50; index++) {
					const begin = performance.now();
					const response = await handle(one[kind]());
					times[kind].push(performance.now() - begin);
					const state = response.headers.get('idempotency-status');
					if (state !== expected[kind]) throw new Error(`${name}, ${kind}: Idempotency-Status ${state}`);
					await response.arrayBuffer();
				}
			}
		}

		for (const kind of Object.keys(one) as Kind[]) runs[kind].push(median(times[kind]));
	}

	return {store: name, costs: {replay: spread(runs.replay), 'check done': spread(runs['check done']), 'check closed': spread(runs['check closed'])}};
}

export async function checkCost({rounds = 3, calls = 500, log = (_line: string): void => undefined}: {rounds?: number; calls?: number; log?: (line: string) => void} = {}): Promise<CheckCostRow[]> {
	const rows: CheckCostRow[] = [];
	const id = randomBytes(4).toString('hex');
	rows.push(await measure('memory', memoryKeyStore(), {rounds, calls}));
	log(format(rows.at(-1)!));
	const redis = createClient({url: REDIS_URL});
	await redis.connect();
	const prefix = `sendonce-bench-check:${id}:`;
	try {
		const store = redisKeyStore(redis, {prefix});
		await redis.ping();
		rows.push(await measure('Redis (node-redis)', store, {rounds, calls}));
		log(format(rows.at(-1)!));
	} finally {
		for await (const keys of redis.scanIterator({MATCH: `${prefix}*`})) if (keys.length > 0) await redis.del(keys);
		await redis.quit();
	}

	const pool = new pg.Pool({connectionString: DATABASE_URL, max: 4});
	const tables = [`sendonce_bench_check_${id}`, `sendonce_bench_check_tx_${id}`];
	try {
		const lease = postgresKeyStore(pool, {table: tables[0]});
		await lease.check!('', {from: 0, ttl: 1});
		rows.push(await measure('PostgreSQL, lease', lease, {rounds, calls}));
		log(format(rows.at(-1)!));
		const transactional = postgresTransactional(pool, {table: tables[1]});
		await transactional.check!('', {from: 0, ttl: 1});
		rows.push(await measure('PostgreSQL, transactional', transactional, {rounds, calls}));
		log(format(rows.at(-1)!));
	} finally {
		for (const table of tables) await pool.query(`DROP TABLE IF EXISTS "${table}"`);
		await pool.end();
	}

	return rows;
}

const cost = ({median: middle, min, max}: Spread) => `${middle.toFixed(3)} ms (${min.toFixed(3)}–${max.toFixed(3)})`;

export function format(row: CheckCostRow): string {
	return `  ${row.store}: replay ${cost(row.costs.replay)}, check of an answered key ${cost(row.costs['check done'])}, check of a key never sent (closes it) ${cost(row.costs['check closed'])}`;
}
