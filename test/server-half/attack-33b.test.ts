// attack-33b: a hostile review of the check of a key on Redis and PostgreSQL (issue 33). Each
// test asserts the behaviour the contract promises, and fails while the finding stands.
import pg from 'pg';
import {afterAll, beforeAll, describe, expect, inject, test} from 'vitest';
import type {TransactionalKeyStore} from '../../src/server.js';
import {postgresKeyStore, postgresTransactional} from '../../src/server/postgres.js';
import {dropTable, uniqueName} from './stores.js';

const TTL = 60_000;
const HOUR = 3_600_000;
const sleep = async (ms: number) => new Promise(resolve => setTimeout(resolve, ms));

function gated() {
	let open!: () => void;
	let started!: () => void;
	const running = new Promise<void>(resolve => {
		started = resolve;
	});
	const gate = new Promise<void>(resolve => {
		open = resolve;
	});
	return {open, started, running, gate};
}

async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
	let settled = false;
	void promise.then(() => {
		settled = true;
	}, () => {
		settled = true;
	});
	const deadline = performance.now() + ms;
	while (!settled && performance.now() < deadline) await sleep(10);
	return settled;
}

describe.skipIf(inject('databaseUrl') === null)('attack-33b: PostgreSQL checks', () => {
	let pool: pg.Pool;
	const tables: string[] = [];
	beforeAll(() => {
		pool = new pg.Pool({connectionString: inject('databaseUrl')!, max: 20});
	});
	afterAll(async () => {
		for (const table of tables) await dropTable(pool, table);
		await pool.end();
	});

	const table = () => {
		const name = `sendonce_a33b_${uniqueName()}`;
		tables.push(name);
		return name;
	};

	// F1 (liveness, contract: "holds no lease: a burst of checks delays no request"). A
	// transactional check waits on the key's row lock for up to `wait` while holding a pooled
	// connection; duplicates, by contrast, give their connection back while they wait. A burst of
	// checks of a key whose handler runs long takes the whole pool for `wait`, and unrelated
	// requests queue behind it.
	test('F1 transactional: a check of a key held by a long handler does not keep a pool connection while it waits', async () => {
		const small = new pg.Pool({connectionString: inject('databaseUrl')!, max: 2});
		const name = table();
		const store: TransactionalKeyStore<any> = postgresTransactional(small, {table: name, wait: 2000});
		try {
			await store.check!('opened', {from: 0, ttl: 1});
			await small.query(`UPDATE "${name}" SET fence = fence - $1::bigint * 1000 WHERE id = ''`, [HOUR]);
			const held = gated();
			const long = store.transaction({id: 'held', fingerprint: 'f', ttl: TTL}, async () => {
				held.started();
				await held.gate;
				return {commit: true, value: 'done'};
			});
			await held.running;
			const checking = store.check!('held', {from: Date.now() - 1000, ttl: TTL});
			await sleep(50);
			// Another key: needs one connection, and one is free but for the check.
			const other = store.transaction({id: 'other', fingerprint: 'f', ttl: TTL}, async () => ({commit: false, value: 'ran'}));
			const quick = await settlesWithin(other, 600);
			held.open();
			await long;
			await checking;
			await other;
			expect(quick).toBe(true);
		} finally {
			await dropTable(small, name);
			await small.end();
		}
	});

	// F2 (liveness): the lease store's check on a table shared with the transactional store (a
	// supported setup) has no lock_timeout: its closing insert waits for an open transactional
	// claim of the key for as long as the handler runs, holding a connection.
	test('F2 lease store on a shared table: a check of a key claimed by an open transaction answers at once: running', async () => {
		const name = table();
		const transactional = postgresTransactional(pool, {table: name, wait: 1000});
		const lease = postgresKeyStore(pool, {table: name});
		await transactional.check!('opened', {from: 0, ttl: 1});
		await pool.query(`UPDATE "${name}" SET fence = fence - $1::bigint * 1000 WHERE id = ''`, [HOUR]);
		const held = gated();
		const long = transactional.transaction({id: 'shared', fingerprint: 'f', ttl: TTL}, async () => {
			held.started();
			await held.gate;
			return {commit: false, value: undefined};
		});
		await held.running;
		const checking = lease.check!('shared', {from: Date.now() - 1000, ttl: TTL});
		const answered = await settlesWithin(checking, 300);
		held.open();
		await long;
		expect(answered).toBe(true);
		expect(await checking).toEqual({state: 'running'});
		// Once that claim rolled back, nothing of it is left: the key closes.
		expect(await lease.check!('shared', {from: Date.now() - 1000, ttl: TTL})).toEqual({state: 'closed'});
	});
});
