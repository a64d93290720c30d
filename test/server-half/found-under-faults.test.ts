// The ways an outside review made sendonce/server run a handler twice, or lose an order
// silently (issue 19), each as the test that failed before its fix. A crash mid-handler in
// transactional mode is in processes.test.ts; the fault test in faults.test.ts.
import {createServer, request as httpRequest, type Server} from 'node:http';
import type {AddressInfo} from 'node:net';
import express5 from 'express5';
import type pg from 'pg';
import {afterAll, afterEach, describe, expect, inject, test, vi} from 'vitest';
import {expressIdempotency, idempotency, memoryKeyStore, toNodeHandler, type IdempotencyOptions, type KeyStore} from '../../src/server.js';
import {postgresKeyStore} from '../../src/server/postgres.js';
import {dropTable, openPool, uniqueName} from './stores.js';

const servers: Server[] = [];
afterEach(async () => {
	vi.useRealTimers();
	for (const server of servers.splice(0)) {
		server.closeAllConnections();
		await new Promise(resolve => server.close(resolve));
	}
});

async function listen(server: Server): Promise<string> {
	servers.push(server);
	await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
	return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const order = (key: string, body: unknown = {order: 1}) => new Request('http://api.test/orders', {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': key}, body: JSON.stringify(body)});

describe('found under faults (issue 19)', () => {
	test('1. an answer whose body streams for longer than the lease keeps the key until it is stored: the duplicate gets 409, the handler runs once', async () => {
		vi.useFakeTimers();
		let runs = 0;
		let endBody!: () => void;
		const bodyEnded = new Promise<void>(resolve => {
			endBody = resolve;
		});
		const handle = idempotency({store: memoryKeyStore(), lease: 1000})(async () => {
			const run = ++runs;
			const body = new ReadableStream<Uint8Array>({
				async pull(controller) {
					if (run === 1) await bodyEnded;
					controller.enqueue(new TextEncoder().encode(`{"order":"ord_${run}"}`));
					controller.close();
				},
			});
			return new Response(body, {status: 201, headers: {'content-type': 'application/json'}});
		});

		const first = handle(order('streamed'));
		// Three leases while the first answer's body is still streaming.
		await vi.advanceTimersByTimeAsync(3000);
		expect((await handle(order('streamed'))).status).toBe(409);
		endBody();
		expect(await (await first).json()).toEqual({order: 'ord_1'});
		const replay = await handle(order('streamed'));
		expect(replay.headers.get('idempotent-replayed')).toBe('true');
		expect(await replay.json()).toEqual({order: 'ord_1'});
		expect(runs).toBe(1);
	});

	test('2b. a handler that first reads its signal after the lease was lost finds it aborted, with the LeaseLostError', async () => {
		vi.useFakeTimers();
		const store = memoryKeyStore();
		const stalled: KeyStore = {...store, renew: async () => new Promise<boolean>(() => undefined)};
		let read: {aborted: boolean; reason: string; heard: number} | undefined;
		const handle = idempotency({store: stalled, lease: 1000, onError: () => undefined})(async (_request, ctx) => {
			await new Promise(resolve => setTimeout(resolve, 2500));
			let heard = 0;
			ctx.signal.addEventListener('abort', () => heard++);
			read = {aborted: ctx.signal.aborted, reason: (ctx.signal.reason as Error).name, heard};
			return Response.json({id: 'ord_1'}, {status: 201});
		});

		const answer = handle(order('read-late'));
		await vi.advanceTimersByTimeAsync(2500);
		await answer;
		expect(read).toEqual({aborted: true, reason: 'LeaseLostError', heard: 0});
	});

	test('2. a lease lost while the handler runs is never silent: its signal aborts, the process that takes the key over and the late complete() both report it, and the late answer is not stored', async () => {
		vi.useFakeTimers();
		const store = memoryKeyStore();
		// Process A's connection to the store stalls: its renewals never come back.
		const stalled: KeyStore = {...store, renew: async () => new Promise<boolean>(() => undefined)};
		const reports: unknown[] = [];
		const onError: IdempotencyOptions['onError'] = (error, context) => reports.push([(error as Error).name, context]);
		let finishA!: () => void;
		let contextA: {fence?: number; signal?: AbortSignal} = {};
		const a = idempotency({store: stalled, lease: 1000, onError})(async (_request, ctx) => {
			contextA = ctx;
			await new Promise<void>(resolve => {
				finishA = resolve;
			});
			return Response.json({id: 'ord_1'}, {status: 201});
		});
		let runsB = 0;
		const b = idempotency({store, lease: 1000, onError})(async () => Response.json({id: `ord_${1 + ++runsB}`}, {status: 201}));

		const first = a(order('stalled'));
		await vi.advanceTimersByTimeAsync(999);
		expect(contextA.signal?.aborted).toBe(false);
		// About two leases: A can no longer confirm its lease, so it is lost.
		await vi.advanceTimersByTimeAsync(1001);
		expect(contextA.signal?.aborted).toBe(true);
		expect((contextA.signal?.reason as Error).name).toBe('LeaseLostError');

		const second = await b(order('stalled'));
		expect(await second.json()).toEqual({id: 'ord_2'});
		finishA();
		expect(await (await first).json()).toEqual({id: 'ord_1'});

		const replay = await b(order('stalled'));
		expect(await replay.json()).toEqual({id: 'ord_2'});
		expect(reports).toEqual([
			['LeaseLostError', {key: 'stalled', phase: 'lease-lost', fence: contextA.fence}],
			['LeaseLostError', {key: 'stalled', phase: 'lease-lost', fence: contextA.fence}],
		]);
	});

	test('3. Express 5 with express.json() before the middleware: the same key with another body is 422, not a replay', async () => {
		const orders: unknown[] = [];
		const api = express5();
		api.post('/orders', express5.json(), expressIdempotency({store: memoryKeyStore()}), (request, response) => {
			orders.push(request.body);
			response.status(201).json({id: orders.length});
		});
		const url = await listen(createServer(api));
		const send = async (body: unknown) => fetch(`${url}/orders`, {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': 'edited'}, body: JSON.stringify(body)});

		expect((await send({item: 'book', quantity: 1})).status).toBe(201);
		const edited = await send({item: 'book', quantity: 3});
		expect(edited.status).toBe(422);
		expect(orders).toEqual([{item: 'book', quantity: 1}]);
	});

	test('4. a 256 MiB keyed upload is refused with 413 before the wrapper reads it; nothing is claimed', async () => {
		const store = memoryKeyStore();
		let runs = 0;
		const url = await listen(createServer(toNodeHandler(idempotency({store})(async () => {
			runs++;
			return new Response(null, {status: 201});
		}))));
		const status = await new Promise<number>((resolve, reject) => {
			const outgoing = httpRequest(url, {method: 'POST', headers: {'content-type': 'application/octet-stream', 'idempotency-key': 'upload', 'content-length': String(256 * 1024 * 1024)}}, incoming => {
				incoming.resume();
				resolve(incoming.statusCode ?? 0);
				outgoing.destroy();
			});
			outgoing.on('error', reject);
			outgoing.write(Buffer.alloc(64 * 1024));
		});

		expect(status).toBe(413);
		expect(store.size).toBe(0);
		expect(runs).toBe(0);
	});

	test('5. Set-Cookie is refused in replayHeaders; a binary answer is replayed byte for byte', async () => {
		expect(() => idempotency({replayHeaders: ['Set-Cookie']})).toThrow(TypeError);
		expect(() => idempotency({replayHeaders: ['Set-Cookie']})).toThrow(/^Expected `replayHeaders` without `set-cookie`/);

		const png = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0xff, 0xfe, 0x80]);
		const handle = idempotency({store: memoryKeyStore()})(async () => new Response(png, {status: 201, headers: [['content-type', 'image/png'], ['link', '</a>; rel="a"'], ['link', '</b>; rel="b"']]}));
		await handle(order('png'));
		const replay = await handle(order('png'));
		expect(replay.headers.get('idempotent-replayed')).toBe('true');
		expect(replay.headers.get('link')).toBe('</a>; rel="a", </b>; rel="b"');
		expect(new Uint8Array(await replay.arrayBuffer())).toEqual(png);
	});

	describe.skipIf(inject('databaseUrl') === null)('6. Postgres cleanup', () => {
		let pool: pg.Pool | undefined;
		const table = `sendonce_test_${uniqueName()}`;
		afterAll(async () => {
			if (!pool) return;
			await dropTable(pool, table);
			await pool.end();
		});

		// 200 new keys a second; SENDONCE_CLEANUP_SECONDS=180 runs the three minutes.
		const seconds = Number(process.env.SENDONCE_CLEANUP_SECONDS ?? 10);
		test(`keeps up with 200 new keys a second for ${seconds} s: no row outlives its expiry by more than one cleanup period`, async () => {
			pool = openPool();
			const interval = 1000;
			const store = postgresKeyStore(pool, {table, cleanupInterval: interval});
			const answer = {status: 201, headers: [['content-type', 'application/json']] as Array<[string, string]>, body: new TextEncoder().encode('{}')};
			let stop = false;
			let made = 0;
			const samples: Array<{expired: number; stale: number}> = [];
			const sample = async () => {
				const {rows} = await pool!.query(`SELECT count(*) FILTER (WHERE expires_at <= now())::int AS expired, count(*) FILTER (WHERE expires_at <= now() - interval '${interval + 1000} milliseconds')::int AS stale FROM "${table}"`);
				samples.push(rows[0] as {expired: number; stale: number});
			};

			const started = performance.now();
			const load = (async () => {
				for (let tick = 0; !stop; tick++) {
					// Ten keys every 50 ms, each claimed and answered with a one-second ttl.
					await Promise.all(Array.from({length: 10}, async () => {
						const id = `k-${made++}`;
						const claimed = await store.claim(id, {fingerprint: 'f', lease: 1000, ttl: 1000});
						if (claimed.state === 'claimed') await store.complete(id, {fence: claimed.fence, fingerprint: 'f', answer, ttl: 1000});
					}));
					const next = started + (tick + 1) * 50;
					await new Promise(resolve => setTimeout(resolve, Math.max(0, next - performance.now())));
				}
			})();
			while (performance.now() - started < seconds * 1000) {
				await new Promise(resolve => setTimeout(resolve, 250));
				await sample();
			}

			stop = true;
			await load;
			const rate = made / ((performance.now() - started) / 1000);
			const most = Math.max(...samples.map(({expired}) => expired));
			console.log(`postgres cleanup: ${made} keys at ${rate.toFixed(0)}/s for ${seconds} s; at most ${most} expired rows (${samples.length} samples), at most ${Math.max(...samples.map(({stale}) => stale))} expired for longer than a period and a second`);
			expect(rate).toBeGreaterThan(150);
			expect(samples.every(({stale}) => stale === 0)).toBe(true);
			expect(most).toBeLessThanOrEqual(Math.ceil(rate * (interval + 500) / 1000));
		}, 60_000 + seconds * 1000);
	});

	test('8. an unknown option is refused, named, as createClient refuses one', () => {
		expect(() => idempotency({nope: 1} as never)).toThrow(TypeError);
		expect(() => idempotency({nope: 1} as never)).toThrow(/^Unknown option `nope`; expected one of store, ttl, lease, maxBody, scope/);
		expect(() => idempotency({cors: {origin: '*', credential: true}} as never)).toThrow(/^Unknown option `cors.credential`/);
	});
});
