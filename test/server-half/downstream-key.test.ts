// `ctx.downstreamKey(name)` (issue 34): the key a handler passes on to another service (a payment
// API's idempotency key, an email's Message-ID), derived from its request's key, never the key.
import pg from 'pg';
import {afterAll, beforeAll, describe, expect, inject, test} from 'vitest';
import {idempotency, memoryKeyStore} from '../../src/server.js';
import {postgresTransactional} from '../../src/server/postgres.js';

const URL_ORDERS = 'http://api.test/orders';

function post(key: string | undefined, body: unknown = {order: 1}, headers: Record<string, string> = {}, url = URL_ORDERS): Request {
	return new Request(url, {method: 'POST', headers: {'content-type': 'application/json', ...key === undefined ? {} : {'idempotency-key': key}, ...headers}, body: JSON.stringify(body)});
}

describe('in lease mode', () => {
	/** A route whose handler records each run's downstream keys, and fails its first run when asked. */
	function route(failFirst = false) {
		const seen: Array<Record<string, string> | undefined> = [];
		const handle = idempotency({store: memoryKeyStore(), scope: request => request.headers.get('x-user') ?? 'anonymous'})(async (_request, ctx) => {
			seen.push(ctx.downstreamKey && {charge: ctx.downstreamKey('charge'), email: ctx.downstreamKey('email')});
			if (failFirst && seen.length === 1) throw new Error('the payment API timed out');
			return Response.json({ok: true}, {status: 201});
		});
		return {handle, seen};
	}

	test('the same in every run of a key (a retry after the handler threw), one per name, and never the key itself', async () => {
		const {handle, seen} = route(true);
		await expect(handle(post('k-1'))).rejects.toThrow('the payment API timed out');
		expect((await handle(post('k-1'))).status).toBe(201);
		expect(seen).toHaveLength(2);
		expect(seen[1]).toEqual(seen[0]);
		const {charge, email} = seen[0]!;
		expect(charge).toMatch(/^[\da-f]{64}$/);
		expect(email).not.toBe(charge);
		expect(charge).not.toContain('k-1');
	});

	test('another for another user with the same key, another route, another body', async () => {
		const {handle, seen} = route();
		await handle(post('k-2'));
		await handle(post('k-2', {order: 1}, {'x-user': 'mallory'}));
		await handle(post('k-3', {order: 1}, {}, 'http://api.test/refunds'));
		await handle(post('k-4', {order: 2}));
		await handle(post('k-4b', {order: 2}));
		const charges = seen.map(keys => keys!.charge);
		expect(new Set(charges).size).toBe(charges.length);
	});

	test('undefined for a request without a key; a name that is no text is refused by name', async () => {
		const names: unknown[] = [];
		const handle = idempotency({store: memoryKeyStore()})(async (_request, ctx) => {
			names.push(ctx.downstreamKey);
			if (ctx.downstreamKey) names.push(((): unknown => {
				try {
					return ctx.downstreamKey!('' as string);
				} catch (error) {
					return (error as Error).message;
				}
			})());
			return new Response(null, {status: 204});
		});
		await handle(post(undefined));
		await handle(post('k-5'));
		expect(names[0]).toBeUndefined();
		expect(names[2]).toMatch(/Expected `name` to be a non-empty string/);
	});

	test('a replay runs nothing, so a downstream call made once is made once', async () => {
		const {handle, seen} = route();
		await handle(post('k-6'));
		await handle(post('k-6'));
		expect(seen).toHaveLength(1);
	});
});

describe.skipIf(inject('databaseUrl') === null)('in transactional mode (PostgreSQL)', () => {
	let pool: pg.Pool;
	const table = `sendonce_downstream_${process.pid}`;
	beforeAll(async () => {
		pool = new pg.Pool({connectionString: inject('databaseUrl')!});
	});
	afterAll(async () => {
		await pool.query(`DROP TABLE IF EXISTS "${table}"`);
		await pool.end();
	});

	test('the same in the run that rolled back and in the retry that commits', async () => {
		const seen: string[] = [];
		const handle = idempotency({store: postgresTransactional(pool, {table})})(async (_request, ctx) => {
			seen.push(ctx.downstreamKey!('email'));
			if (seen.length === 1) throw new Error('rolled back');
			return Response.json({ok: true}, {status: 201});
		});
		await expect(handle(post('t-1'))).rejects.toThrow('rolled back');
		expect((await handle(post('t-1'))).status).toBe(201);
		expect(seen).toHaveLength(2);
		expect(seen[1]).toBe(seen[0]);
		expect(seen[0]).toMatch(/^[\da-f]{64}$/);
	});
});
