// Issue 29: every claim ends, whatever the framework does when the client hangs up. Each of the
// first four tests failed on a6f9ac2: a key held for the life of the process, a transaction left
// `idle in transaction`, a network error stored as an answer.
import {createReadStream, writeFileSync} from 'node:fs';
import {createServer, request as httpRequest} from 'node:http';
import {connect} from 'node:net';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {pipeline} from 'node:stream/promises';
import express4 from 'express';
import express5 from 'express5';
import Fastify from 'fastify';
import pg from 'pg';
import {afterEach, describe, expect, inject, test, vi} from 'vitest';
import {expressIdempotency, fastifyIdempotency, idempotency, memoryKeyStore, toNodeHandler, type IdempotencyEvent} from '../../src/server.js';
import {postgresTransactional} from '../../src/server/postgres.js';
import {closers, listen} from './servers.js';
import {dropTable, uniqueName} from './stores.js';

const post = async (url: string, key: string, body = '{"item":"invoice"}') =>
	fetch(url, {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': key}, body});

/** Sends a whole keyed POST, then hangs up once `started` resolves (the route is running). */
async function hangUpWhile(url: string, key: string, started: Promise<unknown>, body = '{"item":"invoice"}'): Promise<void> {
	const outgoing = httpRequest(url, {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': key}});
	const closed = new Promise(resolve => outgoing.on('close', resolve));
	outgoing.on('error', () => undefined);
	outgoing.end(body);
	await started;
	outgoing.destroy();
	await closed;
}

/** A gate a route waits at, and a count of the routes that reached it. */
function gate() {
	let open!: () => void;
	const opened = new Promise<void>(resolve => {
		open = resolve;
	});
	let arrive!: () => void;
	const arrived = new Promise<void>(resolve => {
		arrive = resolve;
	});
	return {open, opened, arrive, arrived};
}


describe('a client that hangs up while the route runs: the route finishes, its answer is stored, its claim ends', () => {
	test('Fastify: an async route that sets 204 and returns nothing is stored and replayed', async () => {
		const events: IdempotencyEvent[] = [];
		const app = Fastify();
		closers.push(async () => app.close());
		const idempotent = fastifyIdempotency({store: memoryKeyStore(), lease: 300, onEvent: event => events.push(event)});
		await app.register(idempotent);
		const route = gate();
		let effects = 0;
		app.delete('/orders/1', async (_request, reply) => {
			route.arrive();
			await route.opened;
			effects++;
			reply.code(204);
		});
		const url = await app.listen({port: 0, host: '127.0.0.1'});
		const outgoing = httpRequest(`${url}/orders/1`, {method: 'DELETE', headers: {'idempotency-key': 'del-1'}});
		outgoing.on('error', () => undefined);
		outgoing.end();
		await route.arrived;
		outgoing.destroy();
		await new Promise(resolve => outgoing.on('close', resolve));
		route.open();
		await vi.waitFor(() => {
			expect(events.map(event => event.type)).toEqual(['claimed', 'stored']);
		});

		const retry = await fetch(`${url}/orders/1`, {method: 'DELETE', headers: {'idempotency-key': 'del-1'}});
		expect(retry.status).toBe(204);
		expect(retry.headers.get('idempotent-replayed')).toBe('true');
		expect(effects).toBe(1);
	});

	for (const [name, express] of [['Express 4', express4], ['Express 5', express5 as unknown as typeof express4]] as const) {
		test(`${name}: res.sendFile after a hang-up still ends the answer, which is stored and replayed`, async () => {
			const file = join(tmpdir(), `sendonce-invoice-${uniqueName()}.txt`);
			writeFileSync(file, 'invoice 1');
			const app = express();
			const once = expressIdempotency({store: memoryKeyStore(), lease: 300});
			const route = gate();
			let effects = 0;
			app.post('/invoices', express.json(), once, async (_request, response) => {
				route.arrive();
				await route.opened;
				effects++;
				response.sendFile(file);
			});
			const url = await listen(createServer(app));
			const hungUp = hangUpWhile(`${url}/invoices`, 'inv-1', route.arrived);
			await hungUp;
			route.open();
			await vi.waitFor(async () => {
				const retry = await post(`${url}/invoices`, 'inv-1');
				expect(retry.status).toBe(200);
				expect(retry.headers.get('idempotent-replayed')).toBe('true');
				expect(await retry.text()).toBe('invoice 1');
			});
			expect(effects).toBe(1);
		});
	}
});

describe('what a claim holds', () => {
	afterEach(() => {
		vi.useRealTimers();
	});

	test('a running claim holds one timer (its renewal and its deadline both) while it renews, and none once its answer is stored', async () => {
		vi.useFakeTimers();
		const store = memoryKeyStore();
		let renewals = 0;
		const counting = {...store, claim: store.claim.bind(store), complete: store.complete.bind(store), release: store.release.bind(store), renew: async (...args: Parameters<typeof store.renew>) => {
			renewals++;
			return store.renew(...args);
		}};
		const route = gate();
		const handler = idempotency({store: counting, lease: 3000})(async () => {
			route.arrive();
			await route.opened;
			return Response.json({id: 1}, {status: 201});
		});
		const before = vi.getTimerCount();
		const running = handler(new Request('http://localhost/orders', {method: 'POST', headers: {'idempotency-key': 'one-timer'}, body: '{}'}));
		await route.arrived;
		expect(vi.getTimerCount()).toBe(before + 1);
		await vi.advanceTimersByTimeAsync(10_000);
		expect(renewals).toBe(10);
		expect(vi.getTimerCount()).toBe(before + 1);
		route.open();
		expect((await running).status).toBe(201);
		expect(vi.getTimerCount()).toBe(before);
		await vi.advanceTimersByTimeAsync(10_000);
		expect(renewals).toBe(10);
	});
});

describe('a store call that never comes back', () => {
	afterEach(() => {
		vi.useRealTimers();
	});

	for (const [call, status, ended] of [['complete', 201, 'not-stored'], ['release', 503, 'released']] as const) {
		test(`${call}: the claim ends within a lease (event ${ended}), its renewals stop, no timer is left`, async () => {
			vi.useFakeTimers();
			const memory = memoryKeyStore();
			let renewals = 0;
			const store = {
				claim: memory.claim.bind(memory),
				complete: call === 'complete' ? async () => new Promise<boolean>(() => undefined) : memory.complete.bind(memory),
				release: call === 'release' ? async () => new Promise<void>(() => undefined) : memory.release.bind(memory),
				renew: async (...args: Parameters<typeof memory.renew>) => {
					renewals++;
					return memory.renew(...args);
				},
			};
			const events: IdempotencyEvent[] = [];
			const before = vi.getTimerCount();
			const answered = idempotency({store, lease: 3000, onEvent: event => events.push(event), onError: () => undefined})(async () => new Response('ok', {status}))(
				new Request('http://localhost/orders', {method: 'POST', headers: {'idempotency-key': `hang-${call}`}, body: '{}'}),
			);
			await vi.advanceTimersByTimeAsync(3000);
			expect((await answered).status).toBe(status);
			expect(events.map(event => event.type)).toEqual(['claimed', ended]);
			const renewed = renewals;
			await vi.advanceTimersByTimeAsync(10_000);
			expect(renewals).toBe(renewed);
			expect(vi.getTimerCount()).toBe(before);
		});
	}
});

describe('a route whose client hung up and that never answers gives its claim up after hangUpWait', () => {
	test('lease mode: the key is released (event `released`, reason hang-up), the route\'s signal aborts, the retry runs', async () => {
		const events: IdempotencyEvent[] = [];
		const app = express4();
		const once = expressIdempotency({store: memoryKeyStore(), lease: 300, hangUpWait: 200, onEvent: event => events.push(event)});
		const route = gate();
		let runs = 0;
		let aborted: unknown;
		app.post('/exports', express4.json(), once, (_request, response) => {
			runs++;
			const {signal} = once.context(response);
			signal.addEventListener('abort', () => {
				aborted = signal.reason;
			});
			if (runs === 1) {
				route.arrive();
				return; // Never answers: a callback that never came.
			}

			response.status(201).json({run: runs});
		});
		const url = await listen(createServer(app));
		await hangUpWhile(`${url}/exports`, 'exp-1', route.arrived);
		await vi.waitFor(() => {
			expect(events.map(event => event.type)).toEqual(['claimed', 'released']);
		});
		expect(events[1]).toMatchObject({type: 'released', reason: 'hang-up'});
		expect((aborted as Error).name).toBe('AnswerAbandonedError');
		const retry = await post(`${url}/exports`, 'exp-1');
		expect(retry.status).toBe(201);
		expect(await retry.json()).toEqual({run: 2});
	});
});

describe('Response.error() is no answer', () => {
	test('the handler\'s network error is refused as its error: 500, nothing stored, the retry runs again', async () => {
		const store = memoryKeyStore();
		const events: IdempotencyEvent[] = [];
		let runs = 0;
		const once = idempotency({store, onEvent: event => events.push(event)});
		const url = await listen(createServer(toNodeHandler(once(async () => {
			runs++;
			return runs === 1 ? Response.error() : Response.json({run: runs}, {status: 201});
		}), {onError: () => undefined})));
		expect((await post(url, 'err-1')).status).toBe(500);
		const retry = await post(url, 'err-1');
		expect(retry.status).toBe(201);
		expect(retry.headers.get('idempotent-replayed')).toBeNull();
		expect(runs).toBe(2);
		expect(events.filter(event => event.type === 'released')).toMatchObject([{reason: 'throw'}]);
	});
});

const databaseUrl = inject('databaseUrl');
describe.skipIf(databaseUrl === null)('transactional mode: a hang-up leaves no transaction open', () => {
	test('Fastify, a pool of 2: two hang-ups commit their routes\' work; a new key then runs; nothing stays idle in transaction', async () => {
		const application = `sendonce-hang-up-${uniqueName()}`;
		const pool = new pg.Pool({connectionString: databaseUrl!, max: 2, application_name: application});
		const table = `sendonce_test_${uniqueName()}`;
		const effects = `sendonce_effects_${uniqueName()}`;
		await pool.query(`CREATE TABLE "${effects}" (key text)`);
		closers.push(async () => {
			await pool.query(`DROP TABLE IF EXISTS "${effects}"`);
			await dropTable(pool, table);
			await pool.end();
		});
		const app = Fastify();
		closers.push(async () => app.close());
		const idempotent = fastifyIdempotency({store: postgresTransactional(pool, {table}), hangUpWait: 5000});
		await app.register(idempotent);
		const gates = new Map<string, ReturnType<typeof gate>>();
		app.delete('/orders/:id', async (request, reply) => {
			const {key, tx} = idempotent.context(request);
			const held = gates.get(key!);
			held?.arrive();
			await held?.opened;
			await tx.query(`INSERT INTO "${effects}" (key) VALUES ($1)`, [key]);
			reply.code(204);
		});
		const url = await app.listen({port: 0, host: '127.0.0.1'});
		for (const key of ['tx-1', 'tx-2']) {
			const held = gate();
			gates.set(key, held);
			const outgoing = httpRequest(`${url}/orders/1`, {method: 'DELETE', headers: {'idempotency-key': key}});
			outgoing.on('error', () => undefined);
			outgoing.end();
			await held.arrived;
			outgoing.destroy();
			await new Promise(resolve => outgoing.on('close', resolve));
			held.open();
		}

		const fresh = await fetch(`${url}/orders/1`, {method: 'DELETE', headers: {'idempotency-key': 'tx-3'}});
		expect(fresh.status).toBe(204);
		for (const key of ['tx-1', 'tx-2']) {
			const retry = await fetch(`${url}/orders/1`, {method: 'DELETE', headers: {'idempotency-key': key}});
			expect(retry.status).toBe(204);
			expect(retry.headers.get('idempotent-replayed')).toBe('true');
		}

		const {rows} = await pool.query(`SELECT key FROM "${effects}" ORDER BY key`);
		expect(rows.map(row => row.key)).toEqual(['tx-1', 'tx-2', 'tx-3']);
		const open = await pool.query('SELECT count(*)::int AS open FROM pg_stat_activity WHERE application_name = $1 AND state LIKE \'idle in transaction%\'', [application]);
		expect(open.rows[0].open).toBe(0);
		expect(pool.waitingCount).toBe(0);
	});
});

// What a hostile review of the lifecycle found (each reproduced on 461ef52).
describe('the lifecycle, as a hostile review tried it', () => {
	test('Fastify: a route that returns the reply and sends later, after a hang-up, has that answer stored, not an empty one', async () => {
		const app = Fastify();
		closers.push(async () => app.close());
		await app.register(fastifyIdempotency({store: memoryKeyStore()}));
		const route = gate();
		app.post('/orders', async (_request, reply) => {
			route.arrive();
			void route.opened.then(() => reply.code(201).send({id: 42}));
			return reply;
		});
		const url = `${await app.listen({port: 0, host: '127.0.0.1'})}/orders`;
		await hangUpWhile(url, 'later-1', route.arrived);
		route.open();
		await vi.waitFor(async () => {
			const retry = await post(url, 'later-1');
			expect(retry.headers.get('idempotent-replayed')).toBe('true');
			expect([retry.status, await retry.json()]).toEqual([201, {id: 42}]);
		});
	});

	test('Express: two keyed requests pipelined on one keep-alive socket both get their answer', async () => {
		const app = express4();
		const once = expressIdempotency({store: memoryKeyStore()});
		app.post('/orders/:n', express4.json(), once, async (request, response) => {
			// The first answers first: the second is captured while Node hands it the socket.
			await new Promise(resolve => setTimeout(resolve, request.params.n === '1' ? 20 : 60));
			response.status(201).json({n: request.params.n});
		});
		const url = await listen(createServer(app));
		const one = (n: number) => `POST /orders/${n} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nIdempotency-Key: pipelined-${n}\r\nContent-Length: 2\r\n\r\n{}`;
		const socket = connect(Number(new URL(url).port), '127.0.0.1');
		let received = '';
		socket.on('data', chunk => {
			received += String(chunk);
		});
		socket.write(one(1) + one(2));
		await vi.waitFor(() => {
			expect(received.match(/HTTP\/1\.1 201/g)).toHaveLength(2);
		});
		socket.destroy();
		expect(received).toContain('{"n":"1"}');
		expect(received).toContain('{"n":"2"}');
	});

	test('Express: a route whose pipeline fails destroys its response: no crash, the key released; res.setTimeout still fires', async () => {
		const app = express4();
		const events: IdempotencyEvent[] = [];
		const once = expressIdempotency({store: memoryKeyStore(), onEvent: event => events.push(event)});
		app.post('/exports', express4.json(), once, async (_request, response) => {
			await pipeline(createReadStream(join(tmpdir(), `sendonce-missing-${uniqueName()}`)), response).catch(() => undefined);
		});
		app.post('/slow', express4.json(), once, (_request, response) => {
			response.setTimeout(50, () => response.status(504).json({error: 'upstream timed out'}));
		});
		const url = await listen(createServer(app));
		await expect(post(`${url}/exports`, 'pipe-1')).rejects.toThrow();
		await vi.waitFor(() => {
			expect(events.map(event => event.type)).toEqual(['claimed', 'released']);
		});
		const timedOut = await post(`${url}/slow`, 'slow-1');
		expect([timedOut.status, await timedOut.json()]).toEqual([504, {error: 'upstream timed out'}]);
	});

	test('Express 4: a route that answers after its claim was given up writes nowhere, and nothing is left unhandled', async () => {
		const unhandled: unknown[] = [];
		const listener = (reason: unknown) => unhandled.push(reason);
		process.on('unhandledRejection', listener);
		closers.push(async () => process.off('unhandledRejection', listener));
		const events: IdempotencyEvent[] = [];
		const app = express4();
		const once = expressIdempotency({store: memoryKeyStore(), hangUpWait: 0, onEvent: event => events.push(event)});
		const route = gate();
		let answered!: () => void;
		const lateAnswer = new Promise<void>(resolve => {
			answered = resolve;
		});
		app.post('/orders', express4.json(), once, async (_request, response) => {
			route.arrive();
			await route.opened;
			response.status(201).json({late: true});
			answered();
		});
		app.use(((_error, _request, response, _next) => {
			response.status(500).end();
		}) as express4.ErrorRequestHandler);
		const url = await listen(createServer(app));
		await hangUpWhile(`${url}/orders`, 'late-1', route.arrived);
		await vi.waitFor(() => {
			expect(events.map(event => event.type)).toEqual(['claimed', 'released']);
		});
		route.open();
		await lateAnswer;
		await new Promise(resolve => setImmediate(resolve));
		expect(unhandled).toEqual([]);
		expect((await post(`${url}/orders`, 'late-1')).status).toBe(201);
	});

	test('a Fetch handler still running after a hang-up keeps its claim however long it takes: one effect, its answer stored', async () => {
		const events: IdempotencyEvent[] = [];
		const route = gate();
		let effects = 0;
		const once = idempotency({store: memoryKeyStore(), hangUpWait: 0, onEvent: event => events.push(event)});
		const url = await listen(createServer(toNodeHandler(once(async () => {
			route.arrive();
			await route.opened;
			effects++;
			return Response.json({id: effects}, {status: 201});
		}))));
		await hangUpWhile(url, 'fetch-slow-1', route.arrived);
		expect((await post(url, 'fetch-slow-1')).status).toBe(409);
		route.open();
		await vi.waitFor(async () => {
			const retry = await post(url, 'fetch-slow-1');
			expect(retry.headers.get('idempotent-replayed')).toBe('true');
		});
		expect(effects).toBe(1);
		expect(events.filter(event => event.type === 'released')).toEqual([]);
	});
});

describe.skipIf(databaseUrl === null)('transactional mode: a give-up ends the transaction even while a statement waits', () => {
	test('a statement blocked on a lock is cancelled when the claim is given up: released within the bound, nothing idle in transaction', async () => {
		const application = `sendonce-blocked-${uniqueName()}`;
		const pool = new pg.Pool({connectionString: databaseUrl!, max: 2, application_name: application});
		const table = `sendonce_test_${uniqueName()}`;
		const rows = `sendonce_rows_${uniqueName()}`;
		await pool.query(`CREATE TABLE "${rows}" (id int PRIMARY KEY, n int)`);
		await pool.query(`INSERT INTO "${rows}" VALUES (1, 0)`);
		const blocker = new pg.Client({connectionString: databaseUrl!});
		await blocker.connect();
		closers.push(async () => {
			await blocker.end().catch(() => undefined);
			await pool.query(`DROP TABLE IF EXISTS "${rows}"`);
			await dropTable(pool, table);
			await pool.end();
		});
		await blocker.query('BEGIN');
		await blocker.query(`UPDATE "${rows}" SET n = n + 1 WHERE id = 1`);
		const events: IdempotencyEvent[] = [];
		const app = express4();
		const once = expressIdempotency({store: postgresTransactional(pool, {table}), hangUpWait: 100, onEvent: event => events.push(event)});
		const route = gate();
		app.post('/orders', express4.json(), once, async (_request, response, next) => {
			route.arrive();
			try {
				await once.context(response).tx.query(`UPDATE "${rows}" SET n = n + 1 WHERE id = 1`);
				response.status(201).json({ok: true});
			} catch (error) {
				next(error);
			}
		});
		const url = await listen(createServer(app));
		await hangUpWhile(`${url}/orders`, 'blocked-1', route.arrived);
		await vi.waitFor(() => {
			expect(events.map(event => event.type)).toEqual(['claimed', 'released', 'transaction']);
		});
		const open = await pool.query('SELECT count(*)::int AS open FROM pg_stat_activity WHERE application_name = $1 AND state <> \'idle\' AND pid <> pg_backend_pid()', [application]);
		expect(open.rows[0].open).toBe(0);
		await blocker.query('ROLLBACK');
	});
});
