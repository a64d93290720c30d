/*
 * One server under load for `npm run bench:server` (bench/server-peers.ts), in a process of its
 * own: `POST /orders` with a trivial route (201, a small JSON answer) on Express 4, Express 5 or
 * a Fetch-standard handler served by `toNodeHandler`, bare or behind one idempotency layer:
 *
 *   sendonce             expressIdempotency() (Express) or idempotency() (Fetch), on STORE
 *   express-idempotency  its middleware, its in-memory adapter or a Redis adapter of its interface
 *   node-idempotency     @node-idempotency/core behind the wrapper that follows its Express plugin
 *                        (test/server/peers/node-idempotency-express.ts), memory or Redis adapter from npm
 *   powertools           @aws-lambda-powertools/idempotency's makeIdempotent around the route's
 *                        work, its CachePersistenceLayer on Redis (it has no in-memory store)
 *
 * STORE=transactional writes one row per request in a PostgreSQL transaction (bare: BEGIN,
 * INSERT, COMMIT; sendonce: postgresTransactional, the claim in that transaction). The route
 * counts its runs per key; over IPC the parent asks for `{type: 'stats'}` (runs per key, SQL
 * round trips) and gets them, counts reset. Says `{url}` once it listens.
 *
 *   FRAMEWORK=express4|express5|fetch  PEER  STORE=memory|redis|postgres|transactional
 *   SENDONCE=<path of sendonce's server entry to load> REDIS_URL DATABASE_URL PREFIX TABLE
 */
import {createServer, type IncomingMessage, type ServerResponse} from 'node:http';
import type {AddressInfo} from 'node:net';
import {createRequire} from 'node:module';
import {pathToFileURL} from 'node:url';
import pg from 'pg';
import {createClient} from 'redis';

const {FRAMEWORK = 'express4', PEER = 'bare', STORE = 'memory', REDIS_URL = 'redis://127.0.0.1:6379', DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test', PREFIX = 'sendonce-bench:', TABLE = 'sendonce_bench'} = process.env;
const require = createRequire(import.meta.url);
const sendonceEntry = process.env.SENDONCE ?? new URL('../src/server.js', import.meta.url).pathname;
type Server = typeof import('../src/server.js');
type KeyStore = import('../src/server.js').KeyStore;
type Postgres = typeof import('../src/server/postgres.js');
type Redis = typeof import('../src/server/redis.js');
const load = async <T>(file: string): Promise<T> => import(pathToFileURL(sendonceEntry.replace(/server\.(?:js|ts)$/, file)).href) as Promise<T>;

/** Runs of the route per key, since the last `stats`. */
let runs = new Map<string, number>();
/** SQL statements sent (one round trip each), since the last `stats`. */
let statements = 0;
/** SQL statements answered, ever: what a request waited for is how many were answered before its answer began. */
let answered = 0;
const originalQuery = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...rest: unknown[]) {
	statements++;
	const done = () => {
		answered++;
	};
	const callback = rest.at(-1);
	if (typeof callback === 'function') {
		rest[rest.length - 1] = (...results: unknown[]) => {
			done();
			return (callback as (...items: unknown[]) => unknown)(...results);
		};
	}

	const result = (originalQuery as (...items: unknown[]) => unknown).apply(this, rest);
	if (typeof callback !== 'function') (result as Promise<unknown> | undefined)?.then?.(done, done);
	return result;
} as typeof pg.Client.prototype.query;
/** Per request since the last `stats`: the SQL statements answered between its arrival and its answer's first byte (one at a time: sequential requests only). */
let waited: number[] = [];
const counting = (handler: (request: IncomingMessage, response: ServerResponse) => unknown) => (request: IncomingMessage, response: ServerResponse) => {
	const arrived = answered;
	const {writeHead} = response;
	response.writeHead = function (this: ServerResponse, ...rest: unknown[]) {
		waited.push(answered - arrived);
		response.writeHead = writeHead;
		return (writeHead as (...items: unknown[]) => ServerResponse).apply(this, rest);
	} as typeof response.writeHead;
	return handler(request, response);
};

const ran = (key: string | undefined) => {
	const name = key ?? '';
	runs.set(name, (runs.get(name) ?? 0) + 1);
};

const ANSWER = {id: 1, ok: true};
const pool = STORE === 'transactional' || STORE === 'postgres' ? new pg.Pool({connectionString: DATABASE_URL, max: 20}) : undefined;
const ORDERS = `${TABLE}_orders`;
const INSERT = `INSERT INTO "${ORDERS}" (key) VALUES ($1) RETURNING id`;
if (STORE === 'transactional') await pool!.query(`CREATE TABLE IF NOT EXISTS "${ORDERS}" (id bigserial PRIMARY KEY, key text)`);
const redis = STORE === 'redis' ? await createClient({url: REDIS_URL}).connect() : undefined;

/** The bare route's own transaction: BEGIN, INSERT, COMMIT. */
async function bareTransaction(key: string | undefined): Promise<number> {
	const client = await pool!.connect();
	try {
		await client.query('BEGIN');
		const {rows} = await client.query(INSERT, [key]);
		await client.query('COMMIT');
		return rows[0].id as number;
	} finally {
		client.release();
	}
}

async function sendonceStore(): Promise<unknown> {
	const server = await load<Server>('server.js');
	switch (STORE) {
		case 'memory': return server.memoryKeyStore();
		case 'redis': return (await load<Redis>('server/redis.js')).redisKeyStore(redis!, {prefix: PREFIX});
		case 'postgres': return (await load<Postgres>('server/postgres.js')).postgresKeyStore(pool!, {table: TABLE});
		case 'transactional': return (await load<Postgres>('server/postgres.js')).postgresTransactional(pool!, {table: TABLE});
		default: throw new TypeError(`Unknown STORE ${STORE}`);
	}
}

async function fetchHandler(): Promise<(request: IncomingMessage, response: ServerResponse) => Promise<void>> {
	const {idempotency, toNodeHandler} = await load<Server>('server.js');
	if (PEER === 'bare') {
		return toNodeHandler(async request => {
			// The bare route reads its body too, as any route that takes one does.
			await request.arrayBuffer();
			const key = request.headers.get('idempotency-key') ?? undefined;
			ran(key);
			if (STORE === 'transactional') return Response.json({id: await bareTransaction(key), ok: true}, {status: 201});
			return Response.json(ANSWER, {status: 201});
		});
	}

	if (PEER !== 'sendonce') throw new TypeError(`${PEER} has no Fetch-standard handler`);
	const once = idempotency({store: await sendonceStore() as KeyStore});
	return toNodeHandler(once(async (request, ctx) => {
		await request.arrayBuffer();
		ran(ctx.key);
		if (STORE === 'transactional') {
			const {rows} = await (ctx as unknown as {tx: pg.PoolClient}).tx.query(INSERT, [ctx.key]);
			return Response.json({id: rows[0].id, ok: true}, {status: 201});
		}

		return Response.json(ANSWER, {status: 201});
	}));
}

type Express = typeof import('express');
type Handler = (request: any, response: any, next: (error?: unknown) => void) => unknown;

/** express-idempotency's data adapter interface on Redis, written the way its in-memory one is (find, then create). */
function expressIdempotencyRedisAdapter() {
	const name = (key: string) => `${PREFIX}ei:${key}`;
	return {
		async findByIdempotencyKey(key: string) {
			const value = await redis!.get(name(key));
			return value ? JSON.parse(value) as unknown : null;
		},
		async create(resource: {idempotencyKey: string}) {
			if (await redis!.get(name(resource.idempotencyKey))) throw new Error('Duplicate');
			await redis!.set(name(resource.idempotencyKey), JSON.stringify(resource), {EX: 3600});
		},
		async update(resource: {idempotencyKey: string}) {
			await redis!.set(name(resource.idempotencyKey), JSON.stringify(resource), {EX: 3600});
		},
		async delete(key: string) {
			await redis!.del(name(key));
		},
	};
}

/** @node-idempotency behind the middleware that follows its Express plugin (test/server/peers/node-idempotency-express.ts). */
async function nodeIdempotencyMiddleware(): Promise<Handler> {
	const {Idempotency} = await import('@node-idempotency/core');
	const {nodeIdempotencyMiddleware: middleware} = await import('../test/server/peers/node-idempotency-express.js');
	let adapter;
	if (STORE === 'redis') {
		const {RedisStorageAdapter} = await import('@node-idempotency/storage-adapter-redis');
		adapter = new RedisStorageAdapter({url: REDIS_URL});
		await adapter.connect();
	} else {
		const {MemoryStorageAdapter} = await import('@node-idempotency/storage-adapter-memory');
		adapter = new MemoryStorageAdapter();
	}

	return middleware(new Idempotency(adapter, {})) as Handler;
}

/** Powertools' makeIdempotent around the route's work: the key from the header, the method, path and body validated. */
async function powertoolsRoute(): Promise<Handler> {
	if (STORE !== 'redis') throw new TypeError('Powertools idempotency persists to DynamoDB or a Redis-compatible cache only');
	const {makeIdempotent, IdempotencyConfig, IdempotencyAlreadyInProgressError, IdempotencyValidationError} = await import('@aws-lambda-powertools/idempotency');
	const {CachePersistenceLayer} = await import('@aws-lambda-powertools/idempotency/cache');
	const persistenceStore = new CachePersistenceLayer({client: redis as never, keyPrefix: `${PREFIX}pt`} as never);
	const config = new IdempotencyConfig({eventKeyJmesPath: 'key', payloadValidationJmesPath: '[method, path, body]', throwOnNoIdempotencyKey: true});
	// What a Lambda invocation gives it: the time left, which bounds a claim in progress (without it, it warns on every call).
	config.registerLambdaContext({getRemainingTimeInMillis: () => 30_000} as never);
	const work = makeIdempotent(async (event: {key: string; method: string; path: string; body: unknown}) => {
		ran(event.key);
		return {status: 201, body: ANSWER};
	}, {persistenceStore, config});
	return async (request, response, next) => {
		try {
			const answer = await work({key: request.headers['idempotency-key'], method: request.method, path: request.originalUrl, body: request.body});
			response.status(answer.status).json(answer.body);
		} catch (error) {
			if (error instanceof IdempotencyAlreadyInProgressError) response.status(409).set('retry-after', '1').json({error: 'in progress'});
			else if (error instanceof IdempotencyValidationError) response.status(422).json({error: 'key reused'});
			else next(error);
		}
	};
}

async function expressApp(): Promise<(request: IncomingMessage, response: ServerResponse) => void> {
	const express = require(FRAMEWORK === 'express5' ? 'express5' : 'express') as Express;
	const app = express();
	app.set('etag', false);
	app.set('x-powered-by', false);
	const json = express.json({limit: '1mb'});
	const route: Handler = async (request, response, next) => {
		try {
			const key = request.headers['idempotency-key'] as string | undefined;
			ran(key);
			const id = STORE === 'transactional' ? await bareTransaction(key) : 1;
			response.status(201).json({...ANSWER, id});
		} catch (error) {
			next(error);
		}
	};

	switch (PEER) {
		case 'bare': {
			app.post('/orders', json, route);
			break;
		}

		case 'sendonce': {
			const {expressIdempotency} = await load<Server>('server.js');
			const once = expressIdempotency({store: await sendonceStore() as never});
			// KEEP_BYTES=1: the parser keeps the bytes (`verify`, as docs/server.md shows), so the fingerprint hashes them as they came.
			const parser = process.env.KEEP_BYTES === '1' ? express.json({limit: '1mb', verify(request, _response, bytes) {
				(request as {rawBody?: Buffer}).rawBody = bytes;
			}}) : json;
			app.post('/orders', parser, once, async (request, response, next) => {
				try {
					const ctx = once.context(response) as {key: string; tx?: pg.PoolClient};
					ran(ctx.key);
					if (STORE === 'transactional') {
						const {rows} = await ctx.tx!.query(INSERT, [ctx.key]);
						response.status(201).json({id: rows[0].id, ok: true});
					} else {
						response.status(201).json(ANSWER);
					}
				} catch (error) {
					next(error);
				}
			});
			break;
		}

		case 'express-idempotency': {
			const ei = require('express-idempotency') as typeof import('express-idempotency');
			const middleware = ei.idempotency(STORE === 'redis' ? {dataAdapter: expressIdempotencyRedisAdapter() as never} : undefined);
			const service = ei.getSharedIdempotencyService();
			// Its middleware is async: a rejection (its adapter's `Duplicate`) goes to the error handler, not nowhere (Express 4).
			app.post('/orders', json, (request, response, next) => {
				middleware(request, response, next).catch(next);
			}, (request, response, next) => {
				if (service.isHit(request)) return;
				void route(request, response, next);
			});
			break;
		}

		case 'node-idempotency': {
			app.post('/orders', json, await nodeIdempotencyMiddleware(), route);
			break;
		}

		case 'powertools': {
			app.post('/orders', json, await powertoolsRoute());
			break;
		}

		default: throw new TypeError(`Unknown PEER ${PEER}`);
	}

	app.use((error: Error, _request: unknown, response: ServerResponse & {status(code: number): {json(value: unknown): void}}, forward: (error: unknown) => void) => {
		if (response.headersSent) {
			forward(error);
			return;
		}

		response.status(response.statusCode >= 400 ? response.statusCode : 500).json({message: error.message});
	});
	return app as unknown as (request: IncomingMessage, response: ServerResponse) => void;
}

const server = createServer(counting(FRAMEWORK === 'fetch' ? await fetchHandler() : await expressApp()));
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
	process.send?.({url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`});
});
process.on('message', (message: {type: string}) => {
	if (message.type !== 'stats') return;
	const counts = [...runs.values()];
	process.send?.({type: 'stats', keys: counts.length, runs: counts.reduce((sum, count) => sum + count, 0), duplicates: counts.reduce((sum, count) => sum + count - 1, 0), most: Math.max(0, ...counts), statements, waited});
	runs = new Map();
	statements = 0;
	waited = [];
});
process.on('disconnect', () => process.exit(0));
