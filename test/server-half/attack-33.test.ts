// A hostile review of the check of a key (issue 33; docs/server-contract.md, "Checking a key").
// Every test asserts what the contract promises: one that fails shows a way to break it. The
// promise: a check never runs the handler, and the server never answers `closed` for a key whose
// handler ran, may have run or may still run, nor runs a handler for a key it answered `closed`.
import {createServer, request as httpRequest, type Server} from 'node:http';
import type {AddressInfo} from 'node:net';
import express4 from 'express';
import express5 from 'express5';
import Fastify from 'fastify';
import {afterEach, describe, expect, test, vi} from 'vitest';
import {
	expressIdempotency,
	fastifyIdempotency,
	idempotency,
	memoryKeyStore,
	toNodeHandler,
	type IdempotencyEvent,
	type IdempotencyOptions,
	type KeyStore,
	type TransactionalKeyStore,
} from '../../src/server.js';

const servers: Server[] = [];
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
	vi.useRealTimers();
	for (const server of servers.splice(0)) {
		server.closeAllConnections();
		await new Promise(resolve => server.close(resolve));
	}

	for (const close of closers.splice(0)) await close();
});

const URL_ORDERS = 'http://api.test/orders';
const HOUR = 3_600_000;
const sleep = async (ms: number) => new Promise(resolve => setTimeout(resolve, ms));
const state = (response: Response) => response.headers.get('idempotency-status');

function original(key: string, body: unknown = {order: 1}, headers: Record<string, string> = {}): Request {
	return new Request(URL_ORDERS, {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': key, ...headers}, body: JSON.stringify(body)});
}

function check(key: string, created: number | string, headers: Record<string, string> = {}): Request {
	return new Request(URL_ORDERS, {method: 'POST', headers: {'idempotency-key': key, 'idempotency-check': typeof created === 'number' ? `created=${created}` : created, ...headers}});
}

/** A clock the test moves: the memory store's `now`. */
function manualClock(start = Date.UTC(2026, 0, 1)) {
	const clock = {now: start};
	return {clock, read: () => clock.now};
}

/** A Fetch handler that counts its runs, on a store whose clock the test holds. */
function route(options: IdempotencyOptions = {}, answer: (run: number, request: Request) => Response | Promise<Response> = run => Response.json({run}, {status: 201})) {
	const runs: string[] = [];
	const handle = idempotency(options)(async (request, {key}) => {
		runs.push(key!);
		return answer(runs.length, request);
	});
	return {handle, runs};
}

async function listen(server: Server): Promise<string> {
	servers.push(server);
	await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
	return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

type Adapter = 'node' | 'express4' | 'express5' | 'express4+json' | 'express5+json' | 'fastify';
const ADAPTERS: Adapter[] = ['node', 'express4', 'express5', 'express4+json', 'express5+json', 'fastify'];

/** Mounts POST /orders on an adapter; the route counts its runs, awaits `work`, and answers 201 with JSON. */
async function mount(adapter: Adapter, options: IdempotencyOptions, work: () => Promise<unknown> = async () => ({ok: true})) {
	const runs = {count: 0};
	const body = async () => {
		runs.count++;
		return work();
	};

	if (adapter === 'node') {
		const once = idempotency(options);
		const url = await listen(createServer(toNodeHandler(once(async () => Response.json(await body(), {status: 201})), {onError: () => undefined})));
		return {url, runs};
	}

	if (adapter === 'fastify') {
		const server = Fastify();
		closers.push(async () => server.close());
		await server.register(fastifyIdempotency(options as never));
		server.post('/orders', async (_request, reply) => {
			reply.code(201);
			return body();
		});
		return {url: await server.listen({port: 0, host: '127.0.0.1'}), runs};
	}

	// One shape for both majors: their types differ, their use here does not.
	const express = (adapter.startsWith('express4') ? express4 : express5) as unknown as typeof express4;
	const api = express();
	const handlers: unknown[] = adapter.endsWith('+json') ? [express.json()] : [];
	api.post('/orders', ...(handlers as []), expressIdempotency(options as never), async (_request: unknown, response: {status(code: number): {json(value: unknown): void}}, next: (error: unknown) => void) => {
		try {
			response.status(201).json(await body());
		} catch (error) {
			next(error);
		}
	});
	api.use((_error: unknown, _request: unknown, response: {status(code: number): {end(): void}}, _next: unknown) => {
		response.status(500).end();
	});
	return {url: await listen(createServer(api)), runs};
}

const fetchCheck = async (url: string, key: string, created: number | string, headers: Record<string, string> = {}) =>
	fetch(`${url}/orders`, {method: 'POST', headers: {'idempotency-key': key, 'idempotency-check': typeof created === 'number' ? `created=${created}` : created, ...headers}});
const fetchOriginal = async (url: string, key: string, body: unknown = {order: 1}) =>
	fetch(`${url}/orders`, {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': key}, body: JSON.stringify(body)});

/** A memory store made an hour ago (by Date), so that it remembers every claim of the last hour. */
function upForAnHour(): ReturnType<typeof memoryKeyStore> {
	vi.useFakeTimers({toFake: ['Date']});
	vi.setSystemTime(Date.now() - HOUR);
	const store = memoryKeyStore();
	vi.useRealTimers();
	return store;
}

describe('findings: the server answers closed for a key whose handler ran', () => {
	test('F1: a memory store cleared (clear()) forgets every claim, yet still proves keys never used: a check closes a key that ran', async () => {
		const store = upForAnHour();
		const {handle, runs} = route({store, clockSkew: 0});
		const created = Date.now();
		expect((await handle(original('f1', {order: 1}))).status).toBe(201);
		store.clear();
		const response = await handle(check('f1', created));
		// The store no longer remembers every claim made since `created`: it cannot prove anything.
		expect(state(response)).not.toBe('closed');
		expect(runs).toEqual(['f1']);
	});

	test('F2: a created in the future (a client clock fast by more than clockSkew) defeats the restart bound: a restarted store closes a key that ran before it', async () => {
		const {clock, read} = manualClock();
		const before = memoryKeyStore({now: read});
		const {handle: handleBefore, runs} = route({store: before});
		// The key is made and used at t0; the answer was stored.
		expect((await handleBefore(original('f2'))).status).toBe(201);
		// The process restarts an hour later: a new memory store remembers claims from now on only.
		clock.now += HOUR;
		const after = memoryKeyStore({now: read});
		const {handle: handleAfter} = route({store: after});
		clock.now += 60_000;
		// The client's clock is a day fast: it says the key was made a day from now. The server can
		// see that this is past any clock it trusts (created > now + clockSkew), and proves nothing.
		const response = await handleAfter(check('f2', clock.now + 24 * HOUR));
		expect(state(response)).toBe('unknown');
		expect(runs).toEqual(['f2']);
	});

	test('F2b: the same with the ttl bound: an answer forgotten after its ttl, then a check from a fast clock, is closed', async () => {
		const {clock, read} = manualClock();
		const store = memoryKeyStore({now: read});
		clock.now += 2 * HOUR;
		const {handle, runs} = route({store, ttl: HOUR, clockSkew: 0});
		const created = clock.now;
		expect((await handle(original('f2b'))).status).toBe(201);
		clock.now += 2 * HOUR;
		// Honest clock: unknown (made more than a ttl ago).
		expect(state(await handle(check('f2b', created)))).toBe('unknown');
		// Created = the largest value the header takes (15 digits, year 33658).
		const response = await handle(check('f2b', 999_999_999_999_999));
		expect(state(response)).toBe('unknown');
		expect(runs).toEqual(['f2b']);
	});

	test('F3: a ttl raised between the run and the check (a deploy, a store shared by two instances): the check trusts its own ttl and closes a key that ran', async () => {
		const {clock, read} = manualClock();
		const store = memoryKeyStore({now: read});
		clock.now += HOUR;
		// Yesterday's deploy: keys kept for an hour.
		const old = route({store, ttl: HOUR, clockSkew: 0});
		const created = clock.now;
		expect((await old.handle(original('f3'))).status).toBe(201);
		clock.now += 2 * HOUR;
		// Today's deploy keeps keys for a day, on the same store: the answer written with an hour's ttl is gone.
		const now = route({store, ttl: 24 * HOUR, clockSkew: 0});
		const response = await now.handle(check('f3', created));
		expect(state(response)).not.toBe('closed');
		expect(old.runs).toEqual(['f3']);
	});
});

describe('findings: adapters that answer a check with something else', () => {
	test('F6 (not the check\'s: found by its race): Fastify mangles a keyed body that arrives in more than one chunk: a 100 kB JSON body is refused 400', async () => {
		const {url, runs} = await mount('fastify', {store: memoryKeyStore()});
		const response = await fetchOriginal(url, 'f6', {pad: 'x'.repeat(100_000)});
		expect(response.status).toBe(201);
		expect(runs.count).toBe(1);
	});

	// Fastify validates a body before the route's last preHandler, where sendonce answers (after the
	// route's own authentication). A check there is refused: safe (nothing runs, nothing closes, and
	// a client reads no Idempotency-Status as unknown), and documented (docs/server.md, Checks).
	test('F4: Fastify, a route with a body schema refuses a check 400: nothing runs, nothing closes, no Idempotency-Status', async () => {
		const server = Fastify();
		closers.push(async () => server.close());
		await server.register(fastifyIdempotency({store: upForAnHour(), clockSkew: 0}));
		let runs = 0;
		server.post('/orders', {schema: {body: {type: 'object', required: ['order'], properties: {order: {type: 'number'}}}}}, async (_request, reply) => {
			runs++;
			reply.code(201);
			return {ok: true};
		});
		const url = await server.listen({port: 0, host: '127.0.0.1'});
		const created = Date.now();
		const response = await fetchCheck(url, 'f4', created);
		expect(response.status).toBe(400);
		expect(state(response)).toBeNull();
		expect(runs).toBe(0);
		// Not closed: the original runs.
		const original = await fetch(`${url}/orders`, {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': 'f4'}, body: '{"order":1}'});
		expect(original.status).toBe(201);
		expect(runs).toBe(1);
	});

	// A check carries no body, so it names no content type; one that names JSON is refused by
	// Fastify's JSON parser (400, nothing runs, nothing closes), and answered elsewhere.
	test.each(ADAPTERS)('F5: %s, a check that names application/json without a body: answered, or on Fastify refused 400 with nothing run or closed', async adapter => {
		const {url, runs} = await mount(adapter, {store: upForAnHour(), clockSkew: 0});
		const response = await fetchCheck(url, 'f5', Date.now(), {'content-type': 'application/json'});
		expect(state(response)).toBe(adapter === 'fastify' ? null : 'closed');
		expect(runs.count).toBe(0);
	});
});

/** An original POST whose headers and first half are sent now, the rest when `finish` is called. */
function halfSent(url: string, key: string) {
	const body = Buffer.from(JSON.stringify({order: 1, pad: 'x'.repeat(200)}));
	let settle!: (status: number) => void;
	const status = new Promise<number>(resolve => {
		settle = resolve;
	});
	const outgoing = httpRequest(`${url}/orders`, {method: 'POST', agent: false, headers: {'content-type': 'application/json', 'idempotency-key': key, 'content-length': String(body.length)}}, incoming => {
		incoming.resume();
		settle(incoming.statusCode ?? 0);
	});
	outgoing.on('error', () => settle(-1));
	outgoing.write(body.subarray(0, 50));
	return {status, finish: () => outgoing.end(body.subarray(50))};
}

describe('held: a check racing the original in every phase, on every adapter', () => {
	test.each(ADAPTERS)('%s: while the original\'s body is still uploading the key closes, and the original then gets 410 and runs nothing', async adapter => {
		const {url, runs} = await mount(adapter, {store: upForAnHour(), clockSkew: 0});
		const created = Date.now();
		const sending = halfSent(url, 'up-1');
		await sleep(50);
		const checked = await fetchCheck(url, 'up-1', created);
		expect(state(checked)).toBe('closed');
		sending.finish();
		expect(await sending.status).toBe(410);
		expect(runs.count).toBe(0);
	});

	test.each(ADAPTERS)('%s: while the handler runs, 409 running; after, done; never closed', async adapter => {
		let open!: () => void;
		const gate = new Promise<void>(resolve => {
			open = resolve;
		});
		const {url, runs} = await mount(adapter, {store: upForAnHour(), clockSkew: 0}, async () => {
			await gate;
			return {id: 7};
		});
		const created = Date.now();
		const first = fetchOriginal(url, 'run-1');
		await sleep(50);
		const checked = await fetchCheck(url, 'run-1', created);
		expect(checked.status).toBe(409);
		expect(state(checked)).toBe('running');
		open();
		expect((await first).status).toBe(201);
		const done = await fetchCheck(url, 'run-1', created);
		expect(done.status).toBe(201);
		expect(state(done)).toBe('done');
		expect(done.headers.get('idempotent-replayed')).toBe('true');
		expect(await done.json()).toEqual({id: 7});
		expect(runs.count).toBe(1);
	});

	test.each(ADAPTERS)('%s: after the handler threw, released, and a retry runs it again', async adapter => {
		let calls = 0;
		const {url, runs} = await mount(adapter, {store: upForAnHour(), clockSkew: 0, onError: () => undefined}, async () => {
			calls++;
			if (calls === 1) throw new Error('down');
			return {ok: true};
		});
		const created = Date.now();
		expect((await fetchOriginal(url, 'throw-1')).status).toBe(500);
		expect(state(await fetchCheck(url, 'throw-1', created))).toBe('released');
		expect((await fetchOriginal(url, 'throw-1')).status).toBe(201);
		expect(runs.count).toBe(2);
	});

	test.each(['express4', 'express5', 'fastify'] as const)('%s: after a hang-up (and, where the route is not seen to run, hangUpWait gave the claim up) while the route still runs: released or running, never closed', async adapter => {
		let open!: () => void;
		const gate = new Promise<void>(resolve => {
			open = resolve;
		});
		const {url, runs} = await mount(adapter, {store: upForAnHour(), clockSkew: 0, hangUpWait: 20, onError: () => undefined}, async () => {
			await gate;
			return {ok: true};
		});
		const created = Date.now();
		const controller = new AbortController();
		const outgoing = fetch(`${url}/orders`, {method: 'POST', signal: controller.signal, headers: {'content-type': 'application/json', 'idempotency-key': 'hang-1'}, body: '{"order":1}'}).catch(() => undefined);
		await sleep(50);
		controller.abort();
		await outgoing;
		await sleep(150);
		const checked = await fetchCheck(url, 'hang-1', created);
		// Express gives the claim up after hangUpWait (released); Fastify sees its async route still running (running).
		expect(adapter === 'fastify' ? 'running' : 'released').toBe(state(checked));
		open();
		await sleep(50);
		expect(state(await fetchCheck(url, 'hang-1', created))).toBe(adapter === 'fastify' ? 'done' : 'released');
		expect(runs.count).toBe(1);
	});
});

describe('held: lease, release and expiry in the memory store', () => {
	test('a lease lost (renewals fail) while the handler still runs: released, never closed; its answer is still stored', async () => {
		const inner = memoryKeyStore();
		vi.useFakeTimers({toFake: ['Date']});
		vi.setSystemTime(Date.now() - HOUR);
		const made = memoryKeyStore();
		vi.useRealTimers();
		void inner;
		const store: KeyStore = {
			claim: made.claim,
			complete: made.complete,
			release: made.release,
			check: made.check,
			async renew() {
				throw new Error('store unreachable');
			},
		};
		let open!: () => void;
		const gate = new Promise<void>(resolve => {
			open = resolve;
		});
		const {handle, runs} = route({store, lease: 60, ttl: HOUR, clockSkew: 0, onError: () => undefined}, async run => {
			await gate;
			return Response.json({run}, {status: 201});
		});
		const created = Date.now();
		const first = handle(original('lease-1'));
		await sleep(200);
		expect(state(await handle(check('lease-1', created)))).toBe('released');
		open();
		expect((await first).status).toBe(201);
		expect(state(await handle(check('lease-1', created)))).toBe('done');
		expect(runs).toEqual(['lease-1']);
	});

	test('boundaries: from === since closes; now - from === ttl is unknown, ttl - 1 closes; created=0 is unknown', async () => {
		const {clock, read} = manualClock();
		const store = memoryKeyStore({now: read});
		const since = clock.now;
		const {handle, runs} = route({store, ttl: HOUR, clockSkew: 0});
		expect(state(await handle(check('b-0', 0)))).toBe('unknown');
		expect(state(await handle(check('b-1', since - 1)))).toBe('unknown');
		expect(state(await handle(check('b-2', since)))).toBe('closed');
		clock.now = since + HOUR;
		expect(state(await handle(check('b-3', since)))).toBe('unknown');
		clock.now = since + HOUR - 1;
		expect(state(await handle(check('b-4', since)))).toBe('closed');
		// What was left open runs; what was closed does not.
		for (const key of ['b-0', 'b-1', 'b-3']) expect((await handle(original(key))).status).toBe(201);
		for (const key of ['b-2', 'b-4']) expect((await handle(original(key))).status).toBe(410);
		expect(runs).toEqual(['b-0', 'b-1', 'b-3']);
	});

	test('a released claim is still released at the last ms its record is kept, and the check bound says unknown the ms after', async () => {
		const {clock, read} = manualClock();
		const store = memoryKeyStore({now: read});
		const lease = 1000;
		const {handle, runs} = route({store, ttl: HOUR, lease, clockSkew: 0, onError: () => undefined}, async () => {
			throw new Error('down');
		});
		const created = clock.now;
		await handle(original('rel-1')).catch(() => undefined);
		clock.now = created + lease + HOUR - 1;
		expect(state(await handle(check('rel-1', created)))).toBe('released');
		clock.now = created + lease + HOUR;
		expect(state(await handle(check('rel-1', created)))).toBe('unknown');
		expect(runs).toEqual(['rel-1']);
	});

	test('a closed key survives sweeps within its ttl; past its ttl the late original runs (documented: "stays closed for ttl")', async () => {
		const {clock, read} = manualClock();
		const store = memoryKeyStore({now: read});
		const {handle, runs} = route({store, ttl: HOUR, clockSkew: 0});
		expect(state(await handle(check('sw-1', clock.now)))).toBe('closed');
		// Sweeps run on claims at least a minute apart.
		for (let minute = 1; minute <= 59; minute++) {
			clock.now += 60_000;
			await handle(original(`other-${minute}`));
		}

		expect((await handle(original('sw-1'))).status).toBe(410);
		expect(state(await handle(check('sw-1', clock.now)))).toBe('closed');
		clock.now += 2 * 60_000;
		expect((await handle(original('sw-1'))).status).toBe(201);
		expect(runs).toContain('sw-1');
	});
});

describe('held: the header, the key and the options', () => {
	test('a quoted key and a raw one are one key for checks too; odd casing of the header is the header', async () => {
		const {handle, runs} = route({store: upForAnHour(), clockSkew: 0});
		const created = Date.now();
		await handle(original('q-1'));
		expect(state(await handle(check('"q-1"', created)))).toBe('done');
		const closed = await handle(new Request(URL_ORDERS, {method: 'POST', headers: {'IDEMPOTENCY-KEY': '"q-2"', 'IdEmPoTeNcY-ChEcK': `created=${created}`}}));
		expect(state(closed)).toBe('closed');
		expect((await handle(original('q-2'))).status).toBe(410);
		expect(runs).toEqual(['q-1']);
	});

	test.each(ADAPTERS)('%s: a repeated, an empty or a malformed Idempotency-Check gets 400 and runs nothing, and closes nothing', async adapter => {
		const {url, runs} = await mount(adapter, {store: upForAnHour(), clockSkew: 0});
		const created = Date.now();
		for (const value of ['', ' ', `created=${created}, created=${created}`, `created=${created};x`, 'created=1e3', `created=${'9'.repeat(16)}`]) {
			const response = await fetchCheck(url, 'h-1', value);
			expect(response.status, JSON.stringify(value)).toBe(400);
		}

		// Repeated as two header lines.
		const twice = await new Promise<number>(resolve => {
			const outgoing = httpRequest(`${url}/orders`, {method: 'POST', agent: false, headers: [['idempotency-key', 'h-1'], ['idempotency-check', `created=${created}`], ['idempotency-check', `created=${created}`], ['content-length', '0']].flat() as unknown as Record<string, string>}, incoming => {
				incoming.resume();
				resolve(incoming.statusCode ?? 0);
			});
			outgoing.end();
		});
		expect(twice).toBe(400);
		expect(runs.count).toBe(0);
		expect((await fetchOriginal(url, 'h-1')).status).toBe(201);
	});

	test.each(ADAPTERS)('%s: a check with a body is not run, whatever the body', async adapter => {
		const {url, runs} = await mount(adapter, {store: upForAnHour(), clockSkew: 0});
		const response = await fetch(`${url}/orders`, {method: 'POST', headers: {'idempotency-key': 'body-1', 'idempotency-check': `created=${Date.now()}`, 'content-type': 'application/json'}, body: '{"order":1}'});
		expect(state(response)).toBe('closed');
		expect(runs.count).toBe(0);
	});

	test('required: true, a check without a key is 400; methods without POST: the original is not keyed and says no Idempotency-TTL, so no client checks it', async () => {
		const required = route({store: upForAnHour(), required: true});
		const keyless = await required.handle(new Request(URL_ORDERS, {method: 'POST', headers: {'idempotency-check': `created=${Date.now()}`}}));
		expect(keyless.status).toBe(400);
		const putOnly = route({store: upForAnHour(), methods: ['PUT']});
		const answered = await putOnly.handle(original('m-1'));
		expect(answered.headers.get('idempotency-ttl')).toBeNull();
		expect(required.runs).toEqual([]);
	});

	test('scope: async, per user; a scope that throws closes nothing; another user can neither see nor close', async () => {
		const store = upForAnHour();
		const {handle, runs} = route({
			store,
			clockSkew: 0,
			async scope(request) {
				await sleep(1);
				const user = request.headers.get('x-user');
				if (!user) throw new Error('no user');
				return user;
			},
		});
		const created = Date.now();
		await handle(original('s-1', {order: 1}, {'x-user': 'ada'}));
		await expect(handle(check('s-2', created))).rejects.toThrow('no user');
		expect((await handle(original('s-2', {order: 1}, {'x-user': 'ada'}))).status).toBe(201);
		const mallory = await handle(check('s-1', created, {'x-user': 'mallory'}));
		expect(mallory.status).toBe(200);
		expect(await mallory.text()).not.toContain('run');
		expect(state(await handle(check('s-1', created, {'x-user': 'ada'})))).toBe('done');
		expect(runs).toEqual(['s-1', 's-2']);
	});

	test('events: checked and closed are told; an onEvent that throws changes no answer', async () => {
		const events: IdempotencyEvent[] = [];
		const errors: string[] = [];
		const {handle, runs} = route({
			store: upForAnHour(),
			clockSkew: 0,
			onEvent(event) {
				events.push(event);
				throw new Error('hook');
			},
			onError: (_error, {phase}) => errors.push(phase),
		});
		expect(state(await handle(check('e-1', Date.now())))).toBe('closed');
		expect((await handle(original('e-1'))).status).toBe(410);
		expect(events).toEqual([{type: 'checked', key: 'e-1', state: 'closed'}, {type: 'closed', key: 'e-1'}]);
		expect(errors).toEqual(['event', 'event']);
		expect(runs).toEqual([]);
	});

	test('a done check replays the stored answer: status, body byte for byte, no set-cookie, Idempotent-Replayed, Idempotency-TTL; CORS exposes the new headers', async () => {
		const bytes = new Uint8Array([0, 255, 1, 254, 10, 13, 0]);
		const {handle} = route({store: upForAnHour(), clockSkew: 0, cors: {origin: ['https://shop.test'], credentials: true}}, () => new Response(bytes, {status: 202, headers: {'content-type': 'application/octet-stream', 'set-cookie': 'session=secret', 'x-private': 'p', location: '/orders/7'}}));
		const created = Date.now();
		await handle(original('r-1'));
		const response = await handle(check('r-1', created, {origin: 'https://shop.test'}));
		expect(response.status).toBe(202);
		expect(state(response)).toBe('done');
		expect(new Uint8Array(await response.arrayBuffer())).toEqual(bytes);
		expect(response.headers.get('set-cookie')).toBeNull();
		expect(response.headers.get('x-private')).toBeNull();
		expect(response.headers.get('location')).toBe('/orders/7');
		expect(response.headers.get('idempotent-replayed')).toBe('true');
		expect(response.headers.get('idempotency-ttl')).toBe('86400');
		expect(response.headers.get('access-control-allow-origin')).toBe('https://shop.test');
		expect(response.headers.get('access-control-expose-headers')).toMatch(/Idempotency-Status.*Idempotency-TTL/);
	});

	test('a transactional store without check: every check is unknown, nothing runs, no Idempotency-TTL anywhere', async () => {
		let transactions = 0;
		const store: TransactionalKeyStore<object> = {
			mode: 'transactional',
			async transaction(claim, work) {
				transactions++;
				const result = await work({}, claim ? {state: 'claimed'} : undefined);
				return result.value;
			},
			async complete() {},
		};
		const {handle, runs} = route({store: store as never});
		const response = await handle(check('t-1', Date.now()));
		expect(response.status).toBe(200);
		expect(state(response)).toBe('unknown');
		expect(response.headers.get('idempotency-ttl')).toBeNull();
		expect(transactions).toBe(0);
		const answered = await handle(original('t-1'));
		expect(answered.headers.get('idempotency-ttl')).toBeNull();
		expect(runs).toEqual(['t-1']);
	});
});
