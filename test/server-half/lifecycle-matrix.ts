/*
 * The lifecycle matrix of the server half: every adapter × store × answer × hang-up phase, each
 * cell one keyed request whose client hangs up at one point of its life (or not), then retries.
 * A cell checks what a client and an operator can see: the effects the route performed (and the
 * rows it committed), the answers the retries got, the events `onEvent` told, how soon the key
 * was answered or free again, and that nothing outlived the request: no timer (a lease's
 * renewals included), no open transaction, no pool connection, no response left unclosed.
 *
 * `lifecycle.test.ts` runs a seeded pairwise sample of the cells; `npm run test:lifecycle`
 * (test/lifecycle/cli.ts) runs them all. This module needs no vitest: the services' URLs are
 * passed in.
 */
import {createHook} from 'node:async_hooks';
import {randomBytes} from 'node:crypto';
import {createReadStream} from 'node:fs';
import {rm, writeFile} from 'node:fs/promises';
import {createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse} from 'node:http';
import {tmpdir} from 'node:os';
import type {AddressInfo, Socket} from 'node:net';
import {join} from 'node:path';
import {Readable} from 'node:stream';
import express4 from 'express';
import express5 from 'express5';
import Fastify, {type FastifyReply} from 'fastify';
import pg from 'pg';
import {createClient} from 'redis';
import {expressIdempotency, fastifyIdempotency, idempotency, memoryKeyStore, toNodeHandler, type IdempotencyEvent, type IdempotencyOptions, type KeyStore, type TransactionalKeyStore} from '../../src/server.js';
import {postgresKeyStore, postgresTransactional} from '../../src/server/postgres.js';
import {redisKeyStore} from '../../src/server/redis.js';

export const ADAPTERS = ['fetch', 'node-http', 'express4', 'express5', 'fastify'] as const;
export const STORES = ['memory', 'redis', 'postgres-lease', 'transactional'] as const;
export const ANSWERS = ['json', 'empty-204', 'stream', 'sendFile', 'redirect', 'throw', '5xx', 'hijack'] as const;
/**
 * Where the first attempt's client hangs up: while sending its body (`body`), while the route runs
 * and answers soon after (`handler`), while the answer is written or stored (`answer`), never
 * (`none`), or while the route runs and answers only past `hangUpWait` (`stall`). Where sendonce
 * sees the route's handler run (a Fetch handler's promise, a Fastify async route's), a stalled
 * route keeps its claim and its answer is stored; where it cannot (Express and node:http
 * middleware), the claim is given up (`released`, reason `hang-up`), and the route resumes once
 * that was told.
 */
export const PHASES = ['none', 'body', 'handler', 'answer', 'stall'] as const;

export type Adapter = (typeof ADAPTERS)[number];
export type StoreName = (typeof STORES)[number];
export type AnswerKind = (typeof ANSWERS)[number];
export type Phase = (typeof PHASES)[number];

export interface Cell {
	adapter: Adapter;
	store: StoreName;
	answer: AnswerKind;
	phase: Phase;
}

/** The settings every cell runs with: short, so that a cell takes well under a second. */
export const TIMING = {lease: 300, ttl: 60_000, hangUpWait: 400, slack: 1000, transactionalWait: 200, poll: 25} as const;
/** How long after the hang-up the key must be answered or free. */
const BOUND = TIMING.lease + TIMING.hangUpWait + TIMING.slack;
/** How long any one step may take before the cell fails instead of hanging. */
const STEP = 5000;

export const cellName = (cell: Cell) => `${cell.adapter} × ${cell.store} × ${cell.answer} × ${cell.phase}`;

/** Every cell: the full product, but `hijack` (a Fastify reply) only on Fastify. */
export function allCells(): Cell[] {
	const cells: Cell[] = [];
	for (const adapter of ADAPTERS) {
		for (const store of STORES) {
			for (const answer of ANSWERS) {
				if (answer === 'hijack' && adapter !== 'fastify') continue;
				for (const phase of PHASES) cells.push({adapter, store, answer, phase});
			}
		}
	}

	return cells;
}

/** A small seeded PRNG (mulberry32). */
function random(seed: number): () => number {
	let state = seed >>> 0;
	return () => {
		state = (state + 0x6d_2b_79_f5) >>> 0;
		let t = state;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
	};
}

const DIMENSIONS = ['adapter', 'store', 'answer', 'phase'] as const;
const pairsOf = (cell: Cell) => DIMENSIONS.flatMap((first, index) => DIMENSIONS.slice(index + 1).map(second => `${first}=${cell[first]} ${second}=${cell[second]}`));

/**
 * A pairwise covering sample: every value of every dimension, and every pair of values of two
 * dimensions that some cell has (hijack only with Fastify), in at least one cell. Greedy over the
 * cells in a seeded order, so that a seed names one sample.
 */
export function sampleCells(seed: number): Cell[] {
	const next = random(seed);
	const candidates = allCells()
		.map(cell => ({cell, order: next()}))
		.sort((a, b) => a.order - b.order)
		.map(({cell}) => cell);
	const uncovered = new Set(candidates.flatMap(pairsOf));
	const chosen: Cell[] = [];
	while (uncovered.size > 0) {
		let best = candidates[0]!;
		let score = -1;
		for (const cell of candidates) {
			const covers = pairsOf(cell).filter(pair => uncovered.has(pair)).length;
			if (covers > score) {
				best = cell;
				score = covers;
			}
		}

		chosen.push(best);
		for (const pair of pairsOf(best)) uncovered.delete(pair);
	}

	return chosen;
}

// --- small helpers ---------------------------------------------------------------------------

interface Deferred<T> {
	promise: Promise<T>;
	resolve(value: T): void;
}

function deferred<T = void>(): Deferred<T> {
	let resolve!: (value: T) => void;
	const promise = new Promise<T>(settle => {
		resolve = settle;
	});
	return {promise, resolve};
}

/** `promise`, or a rejection naming `what` after `ms`: the timer is always cleared, so the harness leaves none. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
	let timer: ReturnType<typeof setTimeout> | undefined;
	try {
		return await Promise.race([promise, new Promise<never>((_resolve, reject) => {
			timer = setTimeout(() => {
				reject(new Error(`${what}: not within ${Math.round(ms)} ms`));
			}, Math.max(0, ms));
		})]);
	} finally {
		clearTimeout(timer);
	}
}

const delay = async (ms: number) => new Promise(resolve => setTimeout(resolve, ms));
const timeouts = () => process.getActiveResourcesInfo().filter(name => name === 'Timeout').length;

interface Timer {
	hasRef(): boolean;
	_idleTimeout?: number;
	_repeat?: number | null;
}

/**
 * The timers the server half (src/server/) made while a cell runs and that have not ended (fired
 * or been cleared), ref'd or not: an unref'd one (a lease's renewals) is invisible to
 * `getActiveResourcesInfo()`, yet would outlive its claim. Node's own (the Date header's cache,
 * socket timeouts) are not the server half's.
 */
let cellTimers: Map<number, {timer: Timer; site: string}> | undefined;
const timerHook = createHook({
	init(id, type, _trigger, resource) {
		if (type !== 'Timeout' || !cellTimers) return;
		const limit = Error.stackTraceLimit;
		Error.stackTraceLimit = 30;
		// Who called setTimeout or setInterval (not Node for itself, as for the Date header's cache).
		const frames = new Error('a timer').stack!.split('\n');
		Error.stackTraceLimit = limit;
		const made = frames.findIndex(frame => / at set(?:Timeout|Interval) \(node:timers/.test(frame));
		const site = made === -1 ? undefined : frames[made + 1];
		if (site?.includes('/src/server/')) cellTimers.set(id, {timer: resource as Timer, site: site.trim().replace(/^at /, '')});
	},
	destroy(id) {
		cellTimers?.delete(id);
	},
});
const describeTimer = ({timer, site}: {timer: Timer; site: string}) => `${timer._repeat ? 'an interval of' : 'a timeout of'} ${timer._idleTimeout} ms${timer.hasRef() ? '' : ' (unref)'} made at ${site}`;
/** async_hooks tells a timer's end a turn later. */
const hooksTold = async () => new Promise(resolve => setImmediate(() => setImmediate(resolve)));
const uniqueName = () => `${process.pid}_${randomBytes(4).toString('hex')}`;
const failing = (answer: AnswerKind) => answer === 'throw' || answer === '5xx';

/** The status each answer is sent with. */
const STATUS: Record<AnswerKind, number> = {json: 201, 'empty-204': 204, stream: 200, sendFile: 200, redirect: 303, throw: 500, '5xx': 503, hijack: 201};
const STREAM_CHUNKS = ['first chunk of the stream\n', 'second chunk\n', 'third and last chunk\n'];
const FILE_TEXT = 'a line of the file sent with sendFile\n'.repeat(3000);
/** The request body: large enough that half of it is a body still being sent. */
const REQUEST_BODY = Buffer.from(JSON.stringify({item: 'book', pad: 'x'.repeat(4096)}));

// --- the server side of a cell: what the route does, and what it saw -----------------------

/** What the route is given besides the request, whatever the adapter. */
interface RouteContext {
	key?: string;
	signal?: AbortSignal;
	tx?: pg.PoolClient;
}

/** Where the first attempt's server side waits for the test (its client hangs up meanwhile). */
type HoldPoint = 'route' | 'stream' | 'store' | undefined;

function holdPoint({phase, answer}: Cell): HoldPoint {
	if (phase === 'handler' || phase === 'stall') return 'route';
	if (phase === 'answer') return answer === 'stream' ? 'stream' : 'store';
	return undefined;
}

/** One cell's server side: the route's common part, the hold point, and everything the server did. */
class Probe {
	runs = 0;
	effects = 0;
	/** Route runs under way now, and the most at once. */
	running = 0;
	mostRunning = 0;
	bodiesSeen: unknown[] = [];
	events: IdempotencyEvent[] = [];
	errors: string[] = [];
	/** The server's work on each request: a response that closes, a handler promise that settles. */
	work: Array<Promise<unknown>> = [];
	/** The hold point was reached; `gate` lets it go on. */
	readonly reached = deferred();
	readonly gate = deferred();
	private readonly arrivals = new Map<string, Deferred<Socket>>();
	private readonly listeners = new Set<() => void>();
	private held = false;

	constructor(readonly cell: Cell, readonly file: string, private readonly effectsTable: string) {}

	/** Resolves when the server has the attempt's request (its headers): with the server side of its socket. */
	arrival(attempt: number): Promise<Socket> {
		return this.arrivalOf(String(attempt)).promise;
	}

	private arrivalOf(attempt: string): Deferred<Socket> {
		let found = this.arrivals.get(attempt);
		if (!found) {
			found = deferred<Socket>();
			this.arrivals.set(attempt, found);
		}

		return found;
	}

	/** Watches a server: each request's arrival, and the close of its response. */
	watch(server: Server): void {
		server.on('request', (request: IncomingMessage, response: ServerResponse) => {
			this.work.push(new Promise(resolve => response.once('close', resolve)));
			this.arrivalOf(String(request.headers['x-attempt'])).resolve(request.socket);
		});
	}

	onEvent = (event: IdempotencyEvent) => {
		this.events.push(event);
		for (const listener of this.listeners) listener();
	};

	/** Resolves when an event `test` accepts was told (or already was). */
	async told(test: (event: IdempotencyEvent) => boolean): Promise<void> {
		await new Promise<void>(resolve => {
			const check = () => {
				if (!this.events.some(test)) return;
				this.listeners.delete(check);
				resolve();
			};

			this.listeners.add(check);
			check();
		});
	}

	/** The first attempt's server side waits here, at the cell's hold point, until the test opens the gate. */
	async hold(point: HoldPoint): Promise<void> {
		if (this.held || point !== holdPoint(this.cell)) return;
		this.held = true;
		this.reached.resolve();
		await this.gate.promise;
	}

	/** The route, whatever the adapter: its effect, its hold, and its answer's value (it throws for `throw`). */
	async route(ctx: RouteContext, body: unknown): Promise<{key: string | undefined; run: number}> {
		const run = ++this.runs;
		this.mostRunning = Math.max(this.mostRunning, ++this.running);
		this.bodiesSeen.push(body);
		try {
			// Transactional: the effect is a row in the transaction; it commits with the answer or not at all.
			if (ctx.tx) await ctx.tx.query(`INSERT INTO "${this.effectsTable}" (key, run) VALUES ($1, $2)`, [ctx.key, run]);
			await this.hold('route');
			const {answer} = this.cell;
			if (answer === 'throw') throw new Error('the route failed');
			// Lease mode: a route that finds its claim given up (ctx.signal aborted) leaves its effect to the retry.
			if (!ctx.tx && !failing(answer) && ctx.signal?.aborted !== true) this.effects++;
			return {key: ctx.key, run};
		} finally {
			this.running--;
		}
	}

	/** The stream answer's chunks; in the `answer` phase, the rest waits once the first was given. */
	async *chunks(): AsyncGenerator<Buffer> {
		for (const [index, chunk] of STREAM_CHUNKS.entries()) {
			if (index === 1) await this.hold('stream');
			yield Buffer.from(chunk);
		}
	}

	/** A lease store whose `complete` and `release` wait at the `store` hold point. */
	leaseStore(inner: KeyStore): KeyStore {
		return {
			claim: async (...args) => inner.claim(...args),
			renew: async (...args) => inner.renew(...args),
			complete: async (...args) => {
				await this.hold('store');
				return inner.complete(...args);
			},
			release: async (...args) => {
				await this.hold('store');
				return inner.release(...args);
			},
			...(inner.check ? {check: inner.check.bind(inner)} : {}),
		};
	}

	/** A transactional store whose claimed transaction waits at the `store` hold point before it commits or rolls back. */
	transactionalStore<Tx>(inner: TransactionalKeyStore<Tx>): TransactionalKeyStore<Tx> {
		return {
			mode: 'transactional',
			complete: async (...args) => inner.complete(...args),
			...(inner.check ? {check: inner.check.bind(inner)} : {}),
			transaction: async (claim, work) => inner.transaction(claim, async (tx, found) => {
				const claimed = found?.state === 'claimed';
				try {
					const outcome = await work(tx, found);
					if (claimed) await this.hold('store');
					return outcome;
				} catch (error) {
					if (claimed) await this.hold('store');
					throw error;
				}
			}),
		};
	}
}

// --- the adapters: each answer in each framework's own way -----------------------------------

interface Served {
	port: number;
	close(): Promise<void>;
}

/** The options every adapter takes alike (no `scope`, whose request is each framework's own). */
type CellOptions = Omit<IdempotencyOptions, 'scope'>;
type Start = (options: CellOptions, probe: Probe) => Promise<Served>;

const TEXT = {'content-type': 'text/plain; charset=utf-8'};

async function listen(server: Server, probe: Probe): Promise<Served> {
	probe.watch(server);
	await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
	return {
		port: (server.address() as AddressInfo).port,
		async close() {
			server.closeAllConnections();
			await new Promise(resolve => server.close(resolve));
		},
	};
}

/** An answer written on a bare Node response (node-http; Express for what it has no helper of its own for). */
function writeNode(response: ServerResponse, probe: Probe, value: object): void {
	switch (probe.cell.answer) {
		case 'json': {
			response.writeHead(201, {'content-type': 'application/json'}).end(JSON.stringify(value));
			break;
		}

		case 'empty-204': {
			response.statusCode = 204;
			response.end();
			break;
		}

		case 'stream': {
			response.writeHead(200, TEXT);
			Readable.from(probe.chunks()).pipe(response);
			break;
		}

		case 'sendFile': {
			response.writeHead(200, TEXT);
			createReadStream(probe.file).pipe(response);
			break;
		}

		case 'redirect': {
			response.writeHead(303, {location: '/done'}).end();
			break;
		}

		default: {
			response.writeHead(503, TEXT).end('try again');
		}
	}
}

const startFetch: Start = async (options, probe) => {
	const once = idempotency(options);
	const handle = toNodeHandler(once(async (request, ctx) => {
		const value = await probe.route(ctx as RouteContext, await request.json());
		switch (probe.cell.answer) {
			case 'json': return Response.json(value, {status: 201});
			case 'empty-204': return new Response(null, {status: 204});
			case 'stream': return new Response(Readable.toWeb(Readable.from(probe.chunks())) as ReadableStream, {status: 200, headers: TEXT});
			case 'sendFile': return new Response(Readable.toWeb(createReadStream(probe.file)) as ReadableStream, {status: 200, headers: TEXT});
			case 'redirect': return new Response(null, {status: 303, headers: {location: '/done'}});
			default: return new Response('try again', {status: 503, headers: TEXT});
		}
	}), {onError: error => probe.errors.push(String(error))});
	return listen(createServer((request, response) => {
		probe.work.push(handle(request, response));
	}), probe);
};

const startNodeHttp: Start = async (options, probe) => {
	const once = expressIdempotency(options);
	// A route's error, or its answer that could not be written (the key was given up and answered 500 meanwhile).
	const failed = (response: ServerResponse) => (error: unknown) => {
		probe.errors.push(String(error));
		if (!response.headersSent) response.writeHead(500, TEXT).end('route failed');
	};

	return listen(createServer((request, response) => {
		once(request, response, error => {
			if (error) {
				failed(response)(error);
				return;
			}

			probe.route(once.context(response) as RouteContext, (request as {body?: unknown}).body).then(value => {
				writeNode(response, probe, value);
			}).catch(failed(response));
		});
	}), probe);
};

function expressStarter(express: typeof express4): Start {
	return async (options, probe) => {
		const once = expressIdempotency(options);
		const app = express();
		app.post('/orders', once, (request, response, next) => {
			// A late route's error (its claim was given up, and the error handler answered its gone client) is only recorded.
			const fail = (error: unknown) => {
				if (response.headersSent || response.destroyed) probe.errors.push(String(error));
				else next(error);
			};

			probe.route(once.context(response) as RouteContext, request.body).then(value => {
				switch (probe.cell.answer) {
					case 'json': {
						response.status(201).json(value);
						break;
					}

					case 'sendFile': {
						response.sendFile(probe.file, error => {
							if (error) fail(error);
						});
						break;
					}

					case 'redirect': {
						response.redirect(303, '/done');
						break;
					}

					default: {
						writeNode(response, probe, value);
					}
				}
			}).catch(fail);
		});
		app.use((error: unknown, _request: express4.Request, response: express4.Response, _next: express4.NextFunction) => {
			probe.errors.push(String(error));
			if (!response.headersSent) response.status(500).type('text').send('route failed');
		});
		return listen(createServer(app), probe);
	};
}

const startFastify: Start = async (options, probe) => {
	const app = Fastify();
	const plugin = fastifyIdempotency(options);
	await app.register(plugin);
	app.post('/orders', async (request, reply: FastifyReply) => {
		const value = await probe.route(plugin.context(request) as RouteContext, request.body);
		switch (probe.cell.answer) {
			case 'json': {
				reply.code(201);
				return value;
			}

			case 'empty-204': {
				reply.code(204);
				return undefined;
			}

			case 'stream': {
				reply.code(200).type(TEXT['content-type']);
				return Readable.from(probe.chunks());
			}

			case 'sendFile': {
				reply.code(200).type(TEXT['content-type']);
				return createReadStream(probe.file);
			}

			case 'redirect': {
				return reply.redirect('/done', 303);
			}

			case 'hijack': {
				reply.hijack();
				reply.raw.writeHead(201, {'content-type': 'application/json'});
				reply.raw.end(JSON.stringify(value));
				return undefined;
			}

			default: {
				reply.code(503).type(TEXT['content-type']);
				return 'try again';
			}
		}
	});
	probe.watch(app.server);
	await app.listen({port: 0, host: '127.0.0.1'});
	return {
		port: (app.server.address() as AddressInfo).port,
		async close() {
			app.server.closeAllConnections();
			await app.close();
		},
	};
};

const STARTERS: Record<Adapter, Start> = {
	fetch: startFetch,
	'node-http': startNodeHttp,
	express4: expressStarter(express4),
	express5: expressStarter(express5 as unknown as typeof express4),
	fastify: startFastify,
};

// --- the client side ------------------------------------------------------------------------

interface Reply {
	status: number;
	headers: IncomingHttpHeaders;
	body: Buffer;
	replayed: boolean;
}

/** One attempt on a connection of its own (no keep-alive, no client timers): its request, and its reply unless it hangs up. */
function attempt(port: number, key: string, number: number, {partial = false} = {}) {
	const request = httpRequest({
		host: '127.0.0.1',
		port,
		path: '/orders',
		method: 'POST',
		agent: false,
		headers: {'content-type': 'application/json', 'content-length': REQUEST_BODY.length, 'idempotency-key': key, 'x-attempt': String(number)},
	});
	const reply = new Promise<Reply | undefined>(resolve => {
		request.on('response', incoming => {
			const chunks: Buffer[] = [];
			incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
			incoming.on('end', () => {
				resolve({status: incoming.statusCode ?? 0, headers: incoming.headers, body: Buffer.concat(chunks), replayed: incoming.headers['idempotent-replayed'] === 'true'});
			});
			incoming.on('error', () => resolve(undefined));
		});
		request.on('error', () => resolve(undefined));
		request.on('close', () => resolve(undefined));
	});
	// Headers and half the body of a longer Content-Length, or the whole request.
	if (partial) request.write(REQUEST_BODY.subarray(0, REQUEST_BODY.length / 2));
	else request.end(REQUEST_BODY);
	return {request, reply};
}

/** A check of the key (docs/server-contract.md, "Checking a key"): what the server says became of it. */
async function checkKey(port: number, key: string): Promise<string | undefined> {
	return new Promise(resolve => {
		const request = httpRequest({host: '127.0.0.1', port, path: '/orders', method: 'POST', agent: false, headers: {'idempotency-key': key, 'idempotency-check': `created=${Date.now()}`, 'content-length': 0}});
		request.on('response', incoming => {
			incoming.resume();
			incoming.on('end', () => resolve(String(incoming.headers['idempotency-status'])));
			incoming.on('error', () => resolve(undefined));
		});
		request.on('error', () => resolve(undefined));
		request.end();
	});
}

const describeReply = (reply: Reply | undefined) => (reply ? `${reply.status}${reply.replayed ? ' replayed' : ''}` : 'no answer');

/** Polls `test` until it holds or `ms` have passed; says whether it held. */
async function eventually(test: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
	for (const deadline = performance.now() + ms; !(await test());) {
		if (performance.now() > deadline) return false;
		await delay(TIMING.poll);
	}

	return true;
}

// --- what a cell must show ---------------------------------------------------------------------

type Check = (ok: boolean, message: string) => void;

/**
 * Whether sendonce sees the cell's route run until it settles (or hijacks its reply), so that a
 * hang-up gives it all the time it takes: a Fetch handler, a Fastify async route (a stalled one
 * holds before it hijacks).
 */
const seesRouteRun = (cell: Cell) => cell.adapter === 'fetch' || cell.adapter === 'fastify';

/** Whether the cell's claim is given up after the hang-up: a `stall` where sendonce cannot see the route run. */
const givenUp = (cell: Cell) => cell.phase === 'stall' && !seesRouteRun(cell);

/**
 * What a cell's attempts must come to. The client makes a first attempt (hung up, but in `none`),
 * retries until the key is answered or free, then retries once more. A success is stored once and
 * replayed after; the route runs once, or twice after a `stall` (its claim was given up). A
 * failure releases the key each time: every attempt the route saw ran it (the first does not
 * reach the route in `body`).
 */
function expected(cell: Cell) {
	const success = !failing(cell.answer);
	return {
		success,
		status: STATUS[cell.answer],
		runs: success ? (givenUp(cell) ? 2 : 1) : (cell.phase === 'body' ? 2 : 3),
		/** The run whose answer is stored. */
		storedRun: givenUp(cell) ? 2 : 1,
		/** Attempts answered fresh (not replayed), for a success: the first in `none`, the retry after `body` or a claim given up. */
		fresh: cell.phase === 'none' || cell.phase === 'body' || givenUp(cell) ? 1 : 0,
		hangUps: givenUp(cell) ? 1 : 0,
	};
}

/** The body a success's answers must all carry; undefined where the framework writes its own (Express's redirect). */
function expectedBody(cell: Cell, key: string): Buffer | undefined {
	switch (cell.answer) {
		case 'json':
		case 'hijack': return Buffer.from(JSON.stringify({key, run: expected(cell).storedRun}));
		case 'empty-204': return Buffer.alloc(0);
		case 'stream': return Buffer.from(STREAM_CHUNKS.join(''));
		case 'sendFile': return Buffer.from(FILE_TEXT);
		default: return cell.adapter.startsWith('express') ? undefined : Buffer.alloc(0);
	}
}

/** The answers the client got: the status, replays where the answer was stored, the same body and headers each time. */
function checkAnswers(cell: Cell, key: string, answered: Reply[], check: Check): void {
	const {success, status, fresh} = expected(cell);
	const seen = answered.map(describeReply).join(', ');
	if (!success) {
		check(answered.every(reply => reply.status === status && !reply.replayed), `a failing route's key was not released on every attempt: ${seen}`);
		return;
	}

	check(answered.every(reply => reply.status === status), `an answer other than ${status}: ${seen}`);
	check(answered.length > fresh && answered.every((reply, index) => reply.replayed === index >= fresh), `expected ${fresh} fresh answers then replays, got ${seen}`);
	const body = expectedBody(cell, key) ?? answered[0]?.body;
	for (const reply of answered) {
		const which = reply.replayed ? 'replayed' : 'fresh';
		check(reply.body.equals(body!), `a ${which} answer's body is ${JSON.stringify(reply.body.toString().slice(0, 80))}, not ${JSON.stringify(body!.toString().slice(0, 80))}`);
		const type = (answer: Reply) => answer.headers['content-type'] ?? 'none';
		check(type(reply) === type(answered[0]!), `a ${which} answer's content-type is ${type(reply)}, the first answer's ${type(answered[0]!)}`);
		if (cell.answer === 'redirect') check(reply.headers.location === '/done', `a ${which} redirect's location is ${String(reply.headers.location)}`);
	}
}

/** The events: a claim per run, each ended once (stored, or released and why), a replayed per replay, an in-progress per 409. */
function checkEvents(cell: Cell, events: IdempotencyEvent[], replies: Array<Reply | undefined>, check: Check): void {
	const {success, status, runs, hangUps} = expected(cell);
	const of = <Type extends IdempotencyEvent['type']>(type: Type) => events.filter(event => event.type === type) as Array<Extract<IdempotencyEvent, {type: Type}>>;
	const [claimed, stored, released, transactions] = [of('claimed'), of('stored'), of('released'), of('transaction')];
	check(claimed.length === runs, `${claimed.length} claimed events, expected ${runs}`);
	check(stored.length === (success ? 1 : 0) && stored.every(event => event.status === status), `stored events ${JSON.stringify(stored.map(event => event.status))}, expected ${success ? `[${status}]` : '[]'}`);
	check(released.length === (success ? hangUps : runs), `${released.length} released events, expected ${success ? hangUps : runs}`);
	check(released.filter(event => event.reason === 'hang-up').length === hangUps, `released reasons ${JSON.stringify(released.map(event => event.reason))}, expected ${hangUps} hang-up`);
	check(released.every(event => event.reason === 'hang-up' || (event.reason === 'throw' ? cell.answer === 'throw' : event.status === status)), `released events ${JSON.stringify(released.map(event => [event.reason, event.status]))} do not match a ${status} answer`);
	check(stored.length + released.length === claimed.length, `${claimed.length} claims, ${stored.length + released.length} ended`);
	const replays = replies.filter(reply => reply?.replayed).length;
	const conflicts = replies.filter(reply => reply?.status === 409).length;
	check(of('replayed').length === replays, `${of('replayed').length} replayed events for ${replays} replays`);
	check(of('in-progress').length === conflicts, `${of('in-progress').length} in-progress events for ${conflicts} 409s`);
	check(of('lease-lost').length === 0 && of('key-reused').length === 0, `unexpected events: ${of('lease-lost').length} lease-lost, ${of('key-reused').length} key-reused`);
	if (cell.store === 'transactional') {
		const commits = transactions.filter(event => event.committed).length;
		check(commits === stored.length && transactions.length - commits === released.length, `transaction events ${JSON.stringify(transactions.map(event => event.committed))} for ${stored.length} stored and ${released.length} released`);
	} else {
		check(transactions.length === 0, 'transaction events in lease mode');
	}
}

const describeEvent = (event: IdempotencyEvent) => {
	if (event.type === 'released') return `released(${event.reason}${event.status ? ` ${event.status}` : ''})`;
	if (event.type === 'transaction') return `transaction(${event.committed ? 'commit' : 'rollback'})`;
	return event.type;
};

// --- the client side of a cell -----------------------------------------------------------------

interface Driven {
	/** Each attempt's answer, by attempt number from 1 (undefined: hung up, or none came). */
	replies: Array<Reply | undefined>;
	hungUpAt: number;
	settleMs?: number;
	/** Settles once a `stall` route was let go on. */
	resumed: Promise<unknown>;
}

/**
 * The client: the first attempt and its hang-up at the cell's phase (the server's side of the
 * socket seen closed before the route goes on), retries until the key is answered or free (a 409
 * means "again, a little later"), then one more.
 */
async function drive(cell: Cell, port: number, key: string, probe: Probe, check: Check): Promise<Driven> {
	const driven: Driven = {replies: [], hungUpAt: performance.now(), resumed: Promise.resolve()};
	const send = async () => {
		const number = driven.replies.length + 1;
		const reply = await within(attempt(port, key, number).reply, STEP, `attempt ${number}'s answer`);
		driven.replies.push(reply);
		return reply;
	};

	const {status} = expected(cell);
	if (cell.phase === 'none') {
		const first = await send();
		driven.hungUpAt = performance.now();
		check(first?.status === status && !first.replayed, `the first attempt got ${describeReply(first)}, not ${status}`);
	} else {
		const first = attempt(port, key, 1, {partial: cell.phase === 'body'});
		const socket = await within(probe.arrival(1), STEP, 'the first attempt reaching the server');
		if (cell.phase !== 'body') await within(probe.reached.promise, STEP, `the first attempt reaching its hold point (${holdPoint(cell)})`);
		const closed = new Promise(resolve => socket.once('close', resolve));
		first.request.destroy();
		driven.hungUpAt = performance.now();
		driven.replies.push(await first.reply);
		check(driven.replies[0] === undefined, `the first attempt was answered ${describeReply(driven.replies[0])} before it hung up`);
		await within(closed, STEP, 'the server seeing the hang-up');
		// A stalled route goes on once its claim was given up (or the bound passed: then that is the
		// failure); one sendonce sees run goes on past hangUpWait, its claim kept.
		driven.resumed = givenUp(cell)
			? within(probe.told(event => event.type === 'released' && event.reason === 'hang-up'), BOUND, 'the claim given up after the hang-up (released, reason hang-up)')
				.catch((error: unknown) => check(false, (error as Error).message))
				.finally(() => probe.gate.resolve())
			: cell.phase === 'stall'
				? delay(TIMING.hangUpWait + TIMING.lease).then(() => probe.gate.resolve())
				: Promise.resolve(probe.gate.resolve());
	}

	let settled: Reply | undefined;
	while ((settled = await send())?.status === 409 && performance.now() - driven.hungUpAt <= BOUND) await delay(TIMING.poll);
	driven.settleMs = performance.now() - driven.hungUpAt;
	check(settled !== undefined && settled.status !== 409, `the key was neither answered nor free ${Math.round(driven.settleMs)} ms after the hang-up (last: ${describeReply(settled)})`);
	check(driven.settleMs <= BOUND, `the key was answered or free only ${Math.round(driven.settleMs)} ms after the hang-up (bound: lease ${TIMING.lease} + hangUpWait ${TIMING.hangUpWait} + ${TIMING.slack})`);
	// One more: a stored answer replays again; a released key runs again.
	await send();
	return driven;
}

// --- the run ----------------------------------------------------------------------------------

export interface MatrixServices {
	/** Null: the cells of that store cannot run. */
	redisUrl: string | null;
	databaseUrl: string | null;
}

export interface CellResult {
	cell: Cell;
	ms: number;
	/** Each broken expectation, in words; empty when the cell passed. */
	failures: string[];
	/** What was seen, for a failure's report. */
	observations: Record<string, unknown>;
}

export interface Matrix {
	available(store: StoreName): boolean;
	run(cell: Cell): Promise<CellResult>;
	close(): Promise<void>;
}

/**
 * Opens what every cell shares: a Redis client, two pools (the lease store's, and the
 * transactional store's with two connections, so that one leaked shows), their tables, and the
 * file `sendFile` sends. Each cell gets its own key, server and store object.
 */
export async function openMatrix(services: MatrixServices): Promise<Matrix> {
	const run = uniqueName();
	timerHook.enable();
	const file = join(tmpdir(), `sendonce-lifecycle-${run}.txt`);
	await writeFile(file, FILE_TEXT);
	const names = {lease: `sendonce_lc_lease_${run}`, keys: `sendonce_lc_keys_${run}`, effects: `sendonce_lc_effects_${run}`, app: `sendonce_lc_${run}`};
	const redisPrefix = `sendonce-lifecycle:${run}:`;

	const redis = services.redisUrl === null ? undefined : createClient({url: services.redisUrl});
	redis?.on('error', () => undefined);
	await redis?.connect();

	const database = services.databaseUrl;
	// idleTimeoutMillis 0: an idle connection holds no timer, so that the timer count sees only the request's.
	const pool = (max: number, name: string) => (database === null ? undefined : new pg.Pool({connectionString: database, max, idleTimeoutMillis: 0, application_name: name}));
	const leasePool = pool(4, `${names.app}_lease`);
	const txPool = pool(2, `${names.app}_tx`);
	const admin = database === null ? undefined : new pg.Client({connectionString: database, application_name: `${names.app}_admin`});
	await admin?.connect();
	await admin?.query(`CREATE TABLE "${names.effects}" (id serial PRIMARY KEY, key text NOT NULL, run int NOT NULL)`);
	const count = async (sql: string, values: unknown[]) => Number((await admin!.query(sql, values)).rows[0].n);

	let serial = 0;
	const available = (store: StoreName) => (store === 'memory' ? true : store === 'redis' ? redis !== undefined : admin !== undefined);

	function storeFor(store: StoreName, probe: Probe, cellPrefix: string) {
		switch (store) {
			case 'memory': return probe.leaseStore(memoryKeyStore());
			case 'redis': return probe.leaseStore(redisKeyStore(redis!, {prefix: cellPrefix}));
			case 'postgres-lease': return probe.leaseStore(postgresKeyStore(leasePool!, {table: names.lease}));
			default: return probe.transactionalStore(postgresTransactional(txPool!, {table: names.keys, wait: TIMING.transactionalWait}));
		}
	}

	/** Nothing of the cell left in PostgreSQL: every connection back in its pool, no transaction open. */
	async function checkDatabase(cell: Cell, check: Check): Promise<number | undefined> {
		const used = cell.store === 'postgres-lease' ? leasePool : cell.store === 'transactional' ? txPool : undefined;
		if (!used) return undefined;
		const back = () => used.totalCount === used.idleCount && used.waitingCount === 0;
		check(await eventually(back, 1000), `pool connections not back: ${used.totalCount} total, ${used.idleCount} idle, ${used.waitingCount} waiting`);
		let open = 0;
		const closed = async () => (open = await count(`SELECT count(*) AS n FROM pg_stat_activity WHERE state LIKE 'idle in transaction%' AND application_name = ANY($1)`, [[`${names.app}_lease`, `${names.app}_tx`]])) === 0;
		check(await eventually(closed, 1000), `${open} transactions left open (idle in transaction)`);
		return open;
	}

	async function runCell(cell: Cell): Promise<CellResult> {
		const started = performance.now();
		const key = `lc-${run}-${++serial}`;
		const probe = new Probe(cell, file, names.effects);
		const failures: string[] = [];
		const check: Check = (ok, message) => {
			if (!ok) failures.push(message);
		};

		const timersBefore = timeouts();
		const made = new Map<number, {timer: Timer; site: string}>();
		cellTimers = made;
		const options: CellOptions = {
			store: storeFor(cell.store, probe, `${redisPrefix}${serial}:`),
			ttl: TIMING.ttl,
			...(cell.store === 'transactional' ? {} : {lease: TIMING.lease}),
			hangUpWait: TIMING.hangUpWait,
			retryAfter: 0,
			// The key is made during the cell, after its store: a check can prove a failure never ran (transactional).
			clockSkew: 0,
			onEvent: probe.onEvent,
			onError: (error, context) => probe.errors.push(`onError ${context.phase}: ${String(error)}`),
		};
		const served = await STARTERS[cell.adapter](options, probe);
		let driven: Driven | undefined;
		let checked: string | undefined;
		try {
			driven = await drive(cell, served.port, key, probe, check);
			// Once every attempt was answered: a success is done; a failure may have run (lease mode), or rolled back and left nothing (transactional), and is closed.
			checked = await within(checkKey(served.port, key), STEP, 'the check of the key');
		} catch (error) {
			check(false, (error as Error).message);
		} finally {
			probe.gate.resolve();
			await served.close().catch((error: unknown) => check(false, `closing the server: ${String(error)}`));
		}

		// The server side settles within the bound: every response closed, every handler settled, every claim ended.
		const hungUpAt = driven?.hungUpAt ?? performance.now();
		const left = () => Math.max(STEP / 5, hungUpAt + BOUND - performance.now());
		await driven?.resumed;
		await within(Promise.all(probe.work), left(), `every request's server side ending (responses closed, handlers settled; ${probe.work.length} requests)`)
			.catch((error: unknown) => check(false, (error as Error).message));
		const ended = () => probe.events.filter(event => ['stored', 'released', 'lease-lost'].includes(event.type)).length >= probe.events.filter(event => event.type === 'claimed').length;
		await within(probe.told(ended), left(), 'every claim ending (stored or released)').catch((error: unknown) => check(false, (error as Error).message));

		// Nothing left behind: ref'd timers (counted), the server half's own (each one), connections, transactions.
		await hooksTold();
		cellTimers = undefined;
		const timersAfter = timeouts();
		check(timersAfter <= timersBefore, `${timersAfter - timersBefore} timers left after the cell (${timersBefore} before, ${timersAfter} after)`);
		check(made.size === 0, `timers the server half made are left: ${[...made.values()].map(describeTimer).join(', ')}`);
		const openTransactions = await checkDatabase(cell, check);

		// At most one effect per key: once for a success, never for a failure (a rolled-back row is none).
		const {success, runs} = expected(cell);
		const effects = cell.store === 'transactional' ? await count(`SELECT count(*) AS n FROM "${names.effects}" WHERE key = $1`, [key]) : probe.effects;
		check(effects === (success ? 1 : 0), `${effects} effects for the key, expected ${success ? 1 : 0}`);
		const verdict = success ? 'done' : cell.store === 'transactional' ? 'closed' : 'released';
		check(checked === verdict, `the check of the key said ${checked}, expected ${verdict}`);
		check(probe.runs === runs, `the route ran ${probe.runs} times, expected ${runs}`);
		check(probe.mostRunning <= 1 || givenUp(cell), `${probe.mostRunning} route runs at once, though no claim was given up`);
		check(probe.bodiesSeen.every(body => (body as {item?: unknown} | null)?.item === 'book'), 'the route was handed another body than the one sent');

		const replies = driven?.replies ?? [];
		checkAnswers(cell, key, replies.filter((reply, index) => reply !== undefined && reply.status !== 409 && !(index === 0 && cell.phase !== 'none')) as Reply[], check);
		checkEvents(cell, probe.events, replies, check);
		return {
			cell,
			ms: performance.now() - started,
			failures,
			observations: {
				key,
				attempts: replies.map((reply, index) => `${index + 1}: ${index === 0 && cell.phase !== 'none' ? `hung up (${cell.phase})` : describeReply(reply)}`),
				runs: probe.runs,
				effects,
				checked,
				events: probe.events.map(describeEvent),
				settleMs: driven?.settleMs === undefined ? undefined : Math.round(driven.settleMs),
				timers: {before: timersBefore, after: timersAfter, left: [...made.values()].map(describeTimer)},
				openTransactions,
				errors: probe.errors,
			},
		};
	}

	return {
		available,
		run: runCell,
		async close() {
			if (redis) {
				for await (const keys of redis.scanIterator({MATCH: `${redisPrefix}*`})) if (keys.length > 0) await redis.del(keys);
				redis.destroy();
			}

			if (admin) {
				for (const table of [names.lease, names.keys, names.effects]) await admin.query(`DROP TABLE IF EXISTS "${table}"`);
				await admin.end();
			}

			await Promise.all([leasePool?.end(), txPool?.end()]);
			await rm(file, {force: true});
			timerHook.disable();
		},
	};
}
