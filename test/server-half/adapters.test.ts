import {createServer, request as httpRequest, type Server} from 'node:http';
import {connect, type AddressInfo} from 'node:net';
import express4 from 'express';
import express5 from 'express5';
import Fastify from 'fastify';
import {afterEach, describe, expect, test, vi} from 'vitest';
import {expressIdempotency, fastifyIdempotency, idempotency, memoryKeyStore, toNodeHandler} from '../../src/server.js';

const servers: Server[] = [];
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
	for (const server of servers.splice(0)) {
		server.closeAllConnections();
		await new Promise(resolve => server.close(resolve));
	}

	for (const close of closers.splice(0)) await close();
});

async function listen(server: Server): Promise<string> {
	servers.push(server);
	await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
	return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const post = async (url: string, key: string | undefined, body: unknown, headers: Record<string, string> = {}) =>
	fetch(url, {method: 'POST', headers: {'content-type': 'application/json', ...(key ? {'idempotency-key': key} : {}), ...headers}, body: typeof body === 'string' ? body : JSON.stringify(body)});

/** A POST whose body is streamed in `chunk`-byte pieces without a Content-Length, up to `total` bytes or until the server answers. */
async function streamedPost(url: string, key: string, {chunk, total}: {chunk: number; total: number}): Promise<{status: number | 'closed'; sent: number}> {
	return new Promise(resolve => {
		let sent = 0;
		let done = false;
		const finish = (status: number | 'closed') => {
			if (done) return;
			done = true;
			outgoing.destroy();
			resolve({status, sent});
		};

		const outgoing = httpRequest(url, {method: 'POST', headers: {'content-type': 'application/octet-stream', 'idempotency-key': key, 'transfer-encoding': 'chunked'}}, incoming => {
			incoming.resume();
			finish(incoming.statusCode ?? 0);
		});
		outgoing.on('error', () => finish('closed'));
		const piece = Buffer.alloc(chunk, 1);
		const pump = () => {
			while (!done && sent < total) {
				sent += piece.length;
				if (!outgoing.write(piece)) {
					outgoing.once('drain', pump);
					return;
				}
			}

			if (!done) outgoing.end();
		};

		pump();
	});
}

/** A POST announcing a `Content-Length` of `length` that sends only its headers and one KiB. */
async function announcedPost(url: string, key: string, length: number): Promise<number> {
	return new Promise((resolve, reject) => {
		const outgoing = httpRequest(url, {method: 'POST', headers: {'content-type': 'application/octet-stream', 'idempotency-key': key, 'content-length': String(length)}}, incoming => {
			incoming.resume();
			resolve(incoming.statusCode ?? 0);
			outgoing.destroy();
		});
		outgoing.on('error', reject);
		outgoing.write(Buffer.alloc(1024));
	});
}

describe('toNodeHandler', () => {
	test('serves a wrapped handler from node:http: the work once, then replays with its cookies left out', async () => {
		let runs = 0;
		const once = idempotency({store: memoryKeyStore()});
		const url = await listen(createServer(toNodeHandler(once(async (request, {key}) => {
			runs++;
			const body = await request.json() as {order: number};
			return Response.json({order: body.order, key, path: new URL(request.url).pathname}, {status: 201, headers: {'set-cookie': 'a=1'}});
		}))));

		const first = await post(`${url}/orders?x=1`, 'node-1', {order: 5});
		const again = await post(`${url}/orders?x=1`, 'node-1', {order: 5});

		expect(first.status).toBe(201);
		expect(first.headers.get('set-cookie')).toBe('a=1');
		expect(await first.json()).toEqual({order: 5, key: 'node-1', path: '/orders'});
		expect(again.headers.get('idempotent-replayed')).toBe('true');
		expect(again.headers.get('set-cookie')).toBeNull();
		expect(await again.json()).toEqual({order: 5, key: 'node-1', path: '/orders'});
		expect(runs).toBe(1);
	});

	test('an answer idempotency() holds is written whole: its exact bytes, with the headers a wrapper set on it after', async () => {
		const bytes = Uint8Array.from({length: 70_000}, (_, index) => (index * 7) % 256);
		const once = idempotency({store: memoryKeyStore()});
		const wrapped = once(async () => new Response(bytes, {status: 201, headers: {'content-type': 'application/octet-stream'}}));
		const url = await listen(createServer(toNodeHandler(async request => {
			const response = await wrapped(request);
			response.headers.set('x-wrapper', 'yes');
			return response;
		})));

		for (const expected of [undefined, 'true']) {
			const answer = await post(url, 'whole-1', {});
			expect(answer.status).toBe(201);
			expect(answer.headers.get('idempotent-replayed') ?? undefined).toBe(expected);
			expect(answer.headers.get('x-wrapper')).toBe('yes');
			expect(new Uint8Array(await answer.arrayBuffer())).toEqual(bytes);
		}
	});

	test('a handler that throws is answered 500 and reported; the key is free for the retry', async () => {
		const errors: unknown[] = [];
		let runs = 0;
		const once = idempotency({store: memoryKeyStore()});
		const url = await listen(createServer(toNodeHandler(once(async () => {
			if (++runs === 1) throw new Error('boom');
			return new Response('ok', {status: 201});
		}), {onError: error => errors.push(String(error))})));

		expect((await post(url, 'throws', {})).status).toBe(500);
		expect((await post(url, 'throws', {})).status).toBe(201);
		expect(errors).toEqual(['Error: boom']);
	});

	test('an unwrapped handler is handed the body unread: it may refuse a large upload without reading it', async () => {
		const url = await listen(createServer(toNodeHandler(async request => new Response(null, {status: Number(request.headers.get('content-length')) > 1000 ? 413 : 204}))));
		expect(await announcedPost(url, 'any', 256 * 1024 * 1024)).toBe(413);
	});

	test('refuses a handler that is not a function', () => {
		expect(() => toNodeHandler('nope' as never)).toThrow(/^Expected `handler` to be a function, got string/);
	});
});

describe('maxBody: a keyed body is bounded before anything is claimed', () => {
	function bounded(maxBody?: number) {
		const store = memoryKeyStore();
		let runs = 0;
		const handler = toNodeHandler(idempotency({store, ...(maxBody === undefined ? {} : {maxBody})})(async request => {
			runs++;
			return new Response(String((await request.arrayBuffer()).byteLength), {status: 201});
		}));
		return {store, handler, runs: () => runs};
	}

	test('a Content-Length over it is answered 413 before a byte of the body is read; nothing is claimed', async () => {
		const {store, handler, runs} = bounded();
		const url = await listen(createServer(handler));
		expect(await announcedPost(url, 'big', 256 * 1024 * 1024)).toBe(413);
		expect(store.size).toBe(0);
		expect(runs()).toBe(0);
	});

	test('a streamed body is cut off at the limit and answered 413; nothing is claimed', async () => {
		const {store, handler, runs} = bounded(64 * 1024);
		const url = await listen(createServer(handler));
		const {status, sent} = await streamedPost(url, 'stream', {chunk: 16 * 1024, total: 256 * 1024 * 1024});
		expect(status).toBe(413);
		// The server stopped reading at the limit: the client could not push the whole upload through.
		expect(sent).toBeLessThan(32 * 1024 * 1024);
		expect(store.size).toBe(0);
		expect(runs()).toBe(0);
	});

	test('a body at the limit is read, fingerprinted and handed to the handler whole', async () => {
		const {handler, runs} = bounded(64 * 1024);
		const url = await listen(createServer(handler));
		const answer = await fetch(url, {method: 'POST', headers: {'idempotency-key': 'fits'}, body: new Uint8Array(64 * 1024)});
		expect(answer.status).toBe(201);
		expect(await answer.text()).toBe(String(64 * 1024));
		expect(runs()).toBe(1);
	});

	test('a Fetch request with a streamed body over the limit is answered 413 (Next.js, Hono, Workers)', async () => {
		const store = memoryKeyStore();
		const handle = idempotency({store, maxBody: 1000})(async () => new Response('ran', {status: 201}));
		const body = new ReadableStream<Uint8Array>({
			pull(controller) {
				controller.enqueue(new Uint8Array(600));
			},
		});
		const answer = await handle(new Request('http://api.test/orders', {method: 'POST', headers: {'idempotency-key': 'web'}, body, duplex: 'half'} as RequestInit));
		expect(answer.status).toBe(413);
		expect(store.size).toBe(0);
	});

	test('maxBody: Infinity reads any size; a bad maxBody is refused', () => {
		expect(() => idempotency({maxBody: Number.POSITIVE_INFINITY})).not.toThrow();
		expect(() => idempotency({maxBody: -1})).toThrow(/^Expected `maxBody` to be a positive integer, got -1/);
	});
});

type ExpressModule = typeof express4;
const expressVersions: Array<[string, ExpressModule]> = [['Express 4', express4], ['Express 5', express5 as unknown as ExpressModule]];

for (const [version, express] of expressVersions) {
	describe(`expressIdempotency on ${version}`, () => {
		function app(options: Parameters<typeof expressIdempotency>[0], parser = true) {
			const effects: unknown[] = [];
			const started = {count: 0};
			// A route with `wait` answers once the test opens this.
			let open!: () => void;
			const opened = new Promise<void>(resolve => {
				open = resolve;
			});
			const api = express();
			const once = expressIdempotency({store: memoryKeyStore(), ...options});
			const middleware = [...(parser ? [express.json()] : []), once];
			api.post('/orders', ...middleware, (request, response) => {
				const body = request.body as {order?: number; fail?: boolean; wait?: boolean};
				started.count++;
				if (body.fail) throw new Error('route failed');
				effects.push(body);
				const reply = () => response.status(201).set('location', `/orders/${effects.length}`).json({id: effects.length, key: once.context(response).key});
				if (body.wait) void opened.then(reply);
				else reply();
			});
			return {api, effects, started, open};
		}

		test('the route runs once; a duplicate gets its status, location and body replayed', async () => {
			const {api, effects} = app({required: true});
			const url = await listen(createServer(api));
			const first = await post(`${url}/orders`, 'e-1', {order: 1, extra: 'x'});
			const again = await post(`${url}/orders`, 'e-1', {extra: 'x', order: 1});

			expect(first.status).toBe(201);
			expect(await first.json()).toEqual({id: 1, key: 'e-1'});
			expect(again.status).toBe(201);
			expect(again.headers.get('idempotent-replayed')).toBe('true');
			expect(again.headers.get('location')).toBe('/orders/1');
			expect(await again.json()).toEqual({id: 1, key: 'e-1'});
			expect(effects).toHaveLength(1);
		});

		test('400 without a key when required, 422 for another body, 409 while the route runs', async () => {
			const {api, effects, started, open} = app({required: true});
			const url = await listen(createServer(api));
			expect((await post(`${url}/orders`, undefined, {order: 1})).status).toBe(400);

			const slow = post(`${url}/orders`, 'e-2', {order: 2, wait: true});
			// The duplicate is sent once the first has claimed the key and its route is running.
			await vi.waitFor(() => {
				expect(started.count).toBe(1);
			});
			const duplicate = await post(`${url}/orders`, 'e-2', {order: 2, wait: true});
			expect(duplicate.status).toBe(409);
			expect(duplicate.headers.get('retry-after')).toBe('1');
			open();
			expect((await slow).status).toBe(201);
			expect((await post(`${url}/orders`, 'e-2', {order: 3})).status).toBe(422);
			expect(effects).toHaveLength(1);
		});

		test('a route that throws answers 500 through Express and releases the key', async () => {
			const {api, effects, started} = app({});
			const url = await listen(createServer(api));
			expect((await post(`${url}/orders`, 'e-3', {fail: true})).status).toBe(500);
			expect((await post(`${url}/orders`, 'e-3', {fail: true})).status).toBe(500);
			expect(started.count).toBe(2);
			expect(effects).toHaveLength(0);
		});

		test('scope reads the Express request: two users with one key are two orders', async () => {
			const {api, effects} = app({scope: request => String(request.headers['x-user'])});
			const url = await listen(createServer(api));
			await post(`${url}/orders`, 'e-4', {order: 4}, {'x-user': 'alice'});
			await post(`${url}/orders`, 'e-4', {order: 4}, {'x-user': 'bob'});
			await post(`${url}/orders`, 'e-4', {order: 4}, {'x-user': 'bob'});
			expect(effects).toHaveLength(2);
		});

		test('mounted for OPTIONS too, it answers the preflight and adds CORS headers to the route', async () => {
			const api = express();
			const once = expressIdempotency({store: memoryKeyStore(), cors: {origin: 'https://shop.test'}});
			api.options('/orders', once);
			api.post('/orders', express.json(), once, (_request, response) => {
				response.status(201).json({ok: true});
			});
			const url = await listen(createServer(api));
			const preflight = await fetch(`${url}/orders`, {method: 'OPTIONS', headers: {origin: 'https://shop.test', 'access-control-request-method': 'POST'}});
			const answer = await post(`${url}/orders`, 'cors-1', {}, {origin: 'https://shop.test'});

			expect(preflight.status).toBe(204);
			expect(preflight.headers.get('access-control-allow-headers')).toBe('Idempotency-Key, Content-Type, Idempotency-Check');
			expect(answer.headers.get('access-control-allow-origin')).toBe('https://shop.test');
			expect(answer.headers.get('access-control-expose-headers')).toBe('Idempotent-Replayed, Retry-After, Idempotency-Status, Idempotency-TTL');
		});

		test('several values of one header and a binary body are replayed as sent', async () => {
			const api = express();
			const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0xff, 0xfe, 0x80]);
			api.post('/image', expressIdempotency({store: memoryKeyStore()}), (_request, response) => {
				response.append('link', '</a>; rel="a"');
				response.append('link', '</b>; rel="b"');
				response.status(201).type('png').send(png);
			});
			const url = await listen(createServer(api));
			const first = await post(`${url}/image`, 'png-1', {});
			const replay = await post(`${url}/image`, 'png-1', {});

			expect(replay.headers.get('idempotent-replayed')).toBe('true');
			expect(replay.headers.get('link')).toBe('</a>; rel="a", </b>; rel="b"');
			expect(replay.headers.get('content-type')).toBe('image/png');
			expect(Buffer.from(await first.arrayBuffer())).toEqual(png);
			expect(Buffer.from(await replay.arrayBuffer())).toEqual(png);
		});

		test('a Content-Length over maxBody is answered 413 before the route and before anything is claimed', async () => {
			const store = memoryKeyStore();
			const api = express();
			api.post('/orders', expressIdempotency({store, maxBody: 1000}), express.raw(), (_request, response) => {
				response.status(201).end();
			});
			const url = await listen(createServer(api));
			expect(await announcedPost(`${url}/orders`, 'big', 256 * 1024 * 1024)).toBe(413);
			expect(store.size).toBe(0);
		});

		// Each body parser, before the middleware or after it, and none: the same body replays, another body is 422.
		const form = (values: Record<string, string>) => new URLSearchParams(values).toString();
		const parsers = [
			{name: 'express.json()', parser: () => express.json(), type: 'application/json', body: JSON.stringify({order: 1}), other: JSON.stringify({order: 2}), seen: {order: 1}},
			{name: 'express.raw()', parser: () => express.raw({type: '*/*'}), type: 'application/octet-stream', body: 'order=1', other: 'order=2', seen: Buffer.from('order=1').toJSON()},
			{name: 'express.text()', parser: () => express.text({type: '*/*'}), type: 'text/plain', body: 'order 1', other: 'order 2', seen: 'order 1'},
			{name: 'express.urlencoded()', parser: () => express.urlencoded({extended: false}), type: 'application/x-www-form-urlencoded', body: form({order: '1'}), other: form({order: '2'}), seen: {order: '1'}},
		];
		for (const {name, parser, type, body, other, seen} of parsers) {
			for (const place of ['before', 'after'] as const) {
				test(`with ${name} ${place} the middleware: one run, a replay, and 422 for another body`, async () => {
					const bodies: unknown[] = [];
					const api = express();
					const once = expressIdempotency({store: memoryKeyStore()});
					const handlers = place === 'before' ? [parser(), once] : [once, parser()];
					api.post('/orders', ...handlers, (request, response) => {
						bodies.push(Buffer.isBuffer(request.body) ? (request.body as Buffer).toJSON() : request.body);
						response.status(201).json({run: bodies.length});
					});
					const url = await listen(createServer(api));
					const send = async (text: string) => fetch(`${url}/orders`, {method: 'POST', headers: {'content-type': type, 'idempotency-key': `${name}-${place}`}, body: text});

					expect((await send(body)).status).toBe(201);
					const replay = await send(body);
					expect(replay.headers.get('idempotent-replayed')).toBe('true');
					expect((await send(other)).status).toBe(422);
					expect(bodies).toEqual([seen]);
				});
			}
		}

		test('with no body parser at all, the route finds parsed JSON in req.body, and 422 guards another body', async () => {
			const {api, effects} = app({}, false);
			const url = await listen(createServer(api));
			await post(`${url}/orders`, 'e-5', {order: 5});
			await post(`${url}/orders`, 'e-5', {order: 5});
			expect((await post(`${url}/orders`, 'e-5', {order: 6})).status).toBe(422);
			expect(effects).toEqual([{order: 5}]);
		});

		test('refuses an unknown option, naming it', () => {
			expect(() => expressIdempotency({nope: 1} as never)).toThrow(/^Unknown option `nope`; expected one of store, ttl, lease, maxBody/);
		});
	});
}

describe('fastifyIdempotency (Fastify 5)', () => {
	async function app(options: Parameters<typeof fastifyIdempotency>[0] = {}) {
		const effects: unknown[] = [];
		const server = Fastify();
		closers.push(async () => server.close());
		const idempotent = fastifyIdempotency({store: memoryKeyStore(), ...options});
		await server.register(idempotent);
		let open!: () => void;
		const opened = new Promise<void>(resolve => {
			open = resolve;
		});
		const started = {count: 0};
		server.post('/orders', async (request, reply) => {
			started.count++;
			const body = request.body as {order?: number; fail?: boolean; wait?: boolean};
			if (body.fail) throw new Error('route failed');
			if (body.wait) await opened;
			effects.push(body);
			reply.code(201).header('location', `/orders/${effects.length}`);
			return {id: effects.length, key: idempotent.context(request).key};
		});
		server.get('/orders', async () => ({list: effects.length}));
		const url = await server.listen({port: 0, host: '127.0.0.1'});
		return {url, effects, started, open};
	}

	test('the route runs once; a duplicate gets its status, location and body replayed', async () => {
		const {url, effects} = await app({required: true});
		const first = await post(`${url}/orders`, 'f-1', {order: 1, extra: 'x'});
		const again = await post(`${url}/orders`, 'f-1', {extra: 'x', order: 1});

		expect(first.status).toBe(201);
		expect(await first.json()).toEqual({id: 1, key: 'f-1'});
		expect(again.status).toBe(201);
		expect(again.headers.get('idempotent-replayed')).toBe('true');
		expect(again.headers.get('location')).toBe('/orders/1');
		expect(await again.json()).toEqual({id: 1, key: 'f-1'});
		expect(effects).toHaveLength(1);
	});

	test('400 without a key when required, 422 for another body, 409 while the route runs; GET passes', async () => {
		const {url, effects, started, open} = await app({required: true});
		expect((await post(`${url}/orders`, undefined, {order: 1})).status).toBe(400);
		const slow = post(`${url}/orders`, 'f-2', {order: 2, wait: true});
		await vi.waitFor(() => {
			expect(started.count).toBe(1);
		});
		const duplicate = await post(`${url}/orders`, 'f-2', {order: 2, wait: true});
		expect(duplicate.status).toBe(409);
		expect(duplicate.headers.get('retry-after')).toBe('1');
		open();
		expect((await slow).status).toBe(201);
		expect((await post(`${url}/orders`, 'f-2', {order: 3})).status).toBe(422);
		expect(await (await fetch(`${url}/orders`)).json()).toEqual({list: 1});
		expect(effects).toHaveLength(1);
	});

	test('a route that throws answers 500 and releases the key', async () => {
		const {url, started} = await app();
		expect((await post(`${url}/orders`, 'f-3', {fail: true})).status).toBe(500);
		expect((await post(`${url}/orders`, 'f-3', {fail: true})).status).toBe(500);
		expect(started.count).toBe(2);
	});

	test('scope reads the Fastify request: two users with one key are two orders', async () => {
		const {url, effects} = await app({scope: request => String(request.headers['x-user'])});
		await post(`${url}/orders`, 'f-4', {order: 4}, {'x-user': 'alice'});
		await post(`${url}/orders`, 'f-4', {order: 4}, {'x-user': 'bob'});
		await post(`${url}/orders`, 'f-4', {order: 4}, {'x-user': 'bob'});
		expect(effects).toHaveLength(2);
	});

	test('a Content-Length over maxBody is answered 413 before the body is read', async () => {
		const store = memoryKeyStore();
		const {url, started} = await app({store, maxBody: 1000});
		expect(await announcedPost(`${url}/orders`, 'big', 256 * 1024 * 1024)).toBe(413);
		expect(store.size).toBe(0);
		expect(started.count).toBe(0);
	});

	test('refuses an unknown option, naming it', () => {
		expect(() => fastifyIdempotency({nope: 1} as never)).toThrow(/^Unknown option `nope`/);
	});
});

// What a hostile review of the adapters found (each failed before its fix).
describe('the adapters, as a hostile review tried them', () => {
	test('Fastify: a route that answers through reply.hijack() is stored before its answer goes out, and replayed; it runs once', async () => {
		const server = Fastify();
		closers.push(async () => server.close());
		const idempotent = fastifyIdempotency({store: memoryKeyStore(), required: true});
		await server.register(idempotent);
		let runs = 0;
		server.post('/orders', async (_request, reply) => {
			runs++;
			reply.hijack();
			reply.raw.writeHead(201, {'content-type': 'application/json'});
			reply.raw.end(JSON.stringify({ordered: runs}));
		});
		const url = await server.listen({port: 0, host: '127.0.0.1'});
		const first = await post(`${url}/orders`, 'hijacked', {});
		const replay = await post(`${url}/orders`, 'hijacked', {});

		expect(first.status).toBe(201);
		expect(await first.json()).toEqual({ordered: 1});
		expect(replay.headers.get('idempotent-replayed')).toBe('true');
		expect(await replay.json()).toEqual({ordered: 1});
		expect(runs).toBe(1);
	});

	/** A slow route behind Express or Fastify, and a client whose first attempt gives up before it answers. */
	async function slowRoute(framework: 'Express' | 'Fastify', route: () => Promise<unknown>): Promise<{url: string; reports: string[]}> {
		const reports: string[] = [];
		const options = {store: memoryKeyStore(), required: true as const, onError: (_error: unknown, {phase}: {phase: string}) => reports.push(phase)};
		if (framework === 'Express') {
			const once = expressIdempotency(options);
			const api = express4();
			api.post('/pay', express4.json(), once, async (_request, response, next) => {
				try {
					response.status(201).json(await route());
				} catch (error) {
					next(error);
				}
			});
			return {url: await listen(createServer(api)), reports};
		}

		const server = Fastify();
		closers.push(async () => server.close());
		await server.register(fastifyIdempotency(options));
		server.post('/pay', async (_request, reply) => {
			reply.code(201);
			return route();
		});
		return {url: await server.listen({port: 0, host: '127.0.0.1'}), reports};
	}

	test.each(['Express', 'Fastify'] as const)('%s: a client that gives up does not give the key up: its retry gets 409 while the route runs, then the route\'s answer', async framework => {
		let runs = 0;
		let finish!: () => void;
		let started!: () => void;
		const running = new Promise<void>(resolve => {
			started = resolve;
		});
		const {url, reports} = await slowRoute(framework, async () => {
			runs++;
			started();
			await new Promise<void>(resolve => {
				finish = resolve;
			});
			return {charged: runs};
		});
		const attempt = new AbortController();
		const first = fetch(`${url}/pay`, {method: 'POST', headers: {'idempotency-key': 'gave-up', 'content-type': 'application/json'}, body: '{}', signal: attempt.signal}).catch(() => 'gave up');
		await running;
		attempt.abort();
		expect(await first).toBe('gave up');

		const retry = await post(`${url}/pay`, 'gave-up', {});
		expect(retry.status).toBe(409);
		finish();
		await vi.waitFor(async () => {
			const replay = await post(`${url}/pay`, 'gave-up', {});
			expect(replay.headers.get('idempotent-replayed')).toBe('true');
			expect(await replay.json()).toEqual({charged: 1});
		});
		expect(runs).toBe(1);
		expect(reports).toEqual([]);
	});

	test('Fastify: a stream answer that fails gives the key up, instead of renewing its lease for ever', async () => {
		const server = Fastify();
		closers.push(async () => server.close());
		await server.register(fastifyIdempotency({store: memoryKeyStore(), required: true}));
		let runs = 0;
		server.post('/orders', async (_request, reply) => {
			runs++;
			const {Readable} = await import('node:stream');
			const stream = new Readable({read() {}});
			stream.push('{"partial":');
			setImmediate(() => stream.destroy(new Error('the stream broke')));
			return reply.type('application/json').send(stream);
		});
		const url = await server.listen({port: 0, host: '127.0.0.1'});
		await post(`${url}/orders`, 'broken-stream', {}).catch(() => undefined);
		await vi.waitFor(async () => {
			expect((await post(`${url}/orders`, 'broken-stream', {}).then(answer => answer.status, () => 0))).not.toBe(409);
		});
		expect(runs).toBeGreaterThanOrEqual(2);
	});

	test('Fastify fingerprints the body as it came, not as its parser read it: numbers past a double\'s precision and repeated names are two requests', async () => {
		const server = Fastify();
		closers.push(async () => server.close());
		await server.register(fastifyIdempotency({store: memoryKeyStore()}));
		server.post('/orders', async (_request, reply) => reply.code(201).send({ok: true}));
		const url = await server.listen({port: 0, host: '127.0.0.1'});
		const send = async (key: string, body: string) => fetch(`${url}/orders`, {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': key}, body});
		expect((await send('bigint', '{"account": 9007199254740993}')).status).toBe(201);
		expect((await send('bigint', '{"account": 9007199254740992}')).status).toBe(422);
		expect((await send('repeated', '{"to": "alice", "to": "mallory"}')).status).toBe(201);
		expect((await send('repeated', '{"to": "mallory"}')).status).toBe(422);
		expect((await send('repeated', '{ "to":"alice","to":"mallory" }')).headers.get('idempotent-replayed')).toBe('true');
	});

	test('Express with a parser before the middleware fingerprints the bytes its verify kept in req.rawBody', async () => {
		const api = express4();
		api.post('/orders', express4.json({verify: (request, _response, bytes) => {
			(request as {rawBody?: Buffer}).rawBody = bytes;
		}}), expressIdempotency({store: memoryKeyStore()}), (_request, response) => {
			response.status(201).json({ok: true});
		});
		const url = await listen(createServer(api));
		const send = async (body: string) => fetch(`${url}/orders`, {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': 'raw'}, body});
		expect((await send('{"account": 9007199254740993}')).status).toBe(201);
		expect((await send('{"account": 9007199254740992}')).status).toBe(422);
	});

	test('a parsed body nested deeper than 512 is refused with 400, the same way in every process', async () => {
		const server = Fastify();
		closers.push(async () => server.close());
		await server.register(fastifyIdempotency({store: memoryKeyStore()}));
		server.post('/orders', async () => ({ok: true}));
		const url = await server.listen({port: 0, host: '127.0.0.1'});
		const api = express4();
		api.post('/orders', express4.json(), expressIdempotency({store: memoryKeyStore()}), (_request, response) => {
			response.status(201).end();
		});
		const expressUrl = await listen(createServer(api));
		const deep = `${'['.repeat(600)}${']'.repeat(600)}`;
		// Fastify keeps the bytes: read as bytes past the depth, not refused.
		expect((await fetch(`${url}/orders`, {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': 'deep'}, body: deep})).status).toBe(200);
		const refused = await fetch(`${expressUrl}/orders`, {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': 'deep'}, body: deep});
		expect(refused.status).toBe(400);
		expect(await refused.json()).toMatchObject({title: 'Request body too deeply nested'});
	});

	test('Express: the answer goes out with its own reason phrase, not the one an error handler set meanwhile', async () => {
		const api = express4();
		const store = memoryKeyStore();
		const slow = {...store, complete: async (...args: Parameters<typeof store.complete>) => {
			await new Promise(resolve => setTimeout(resolve, 20));
			return store.complete(...args);
		}};
		api.post('/orders', expressIdempotency({store: slow}), (_request, response, next) => {
			response.status(201).json({ok: true});
			setImmediate(() => next(new Error('after the answer')));
		});
		const url = await listen(createServer(api));
		const line = await new Promise<string>((resolve, reject) => {
			const outgoing = httpRequest(`${url}/orders`, {method: 'POST', headers: {'idempotency-key': 'phrase', 'content-type': 'application/json'}}, incoming => {
				incoming.resume();
				resolve(`${incoming.statusCode} ${incoming.statusMessage}`);
			});
			outgoing.on('error', reject);
			outgoing.end('{}');
		});
		expect(line).toBe('201 Created');
	});

	test('Fastify: the 413 for a Content-Length over maxBody carries the CORS headers', async () => {
		const server = Fastify();
		closers.push(async () => server.close());
		await server.register(fastifyIdempotency({store: memoryKeyStore(), maxBody: 1000, cors: {origin: 'https://shop.test'}}));
		server.post('/orders', async () => ({ok: true}));
		const url = await server.listen({port: 0, host: '127.0.0.1'});
		const answer = await post(`${url}/orders`, 'big', {pad: 'x'.repeat(2000)}, {origin: 'https://shop.test'});
		expect(answer.status).toBe(413);
		expect(answer.headers.get('access-control-allow-origin')).toBe('https://shop.test');
	});

	test.each(expressVersions)('%s: a route whose error comes after its answer still sends that answer, and it is what replays', async (_, express) => {
		const api = express();
		const store = memoryKeyStore();
		// A store with a round trip, during which the route's error reaches the error handler.
		const slow = {...store, complete: async (...args: Parameters<typeof store.complete>) => {
			await new Promise(resolve => setTimeout(resolve, 20));
			return store.complete(...args);
		}};
		let runs = 0;
		api.post('/orders', expressIdempotency({store: slow, required: true}), (_request, response, next) => {
			response.status(201).json({id: ++runs});
			setImmediate(() => next(new Error('the audit log failed after the answer')));
		});
		api.use((_error: Error, _request: unknown, response: {headersSent: boolean; status(code: number): {send(body: string): void}}, next: (error?: unknown) => void) => {
			if (response.headersSent) next(_error);
			else response.status(500).send('failed');
		});
		const url = await listen(createServer(api));
		const first = await post(`${url}/orders`, 'after', {});
		expect(first.status).toBe(201);
		expect(await first.json()).toEqual({id: 1});
		const replay = await post(`${url}/orders`, 'after', {});
		expect(replay.headers.get('idempotent-replayed')).toBe('true');
		expect(await replay.json()).toEqual({id: 1});
	});

	test.each(expressVersions)('%s: with express.json() before the middleware, a chunked body over maxBody is 413', async (_, express) => {
		const api = express();
		const store = memoryKeyStore();
		api.post('/orders', express.json(), expressIdempotency({store, maxBody: 1000}), (_request, response) => {
			response.status(201).end();
		});
		const url = await listen(createServer(api));
		const status = await new Promise<number>((resolve, reject) => {
			const outgoing = httpRequest(`${url}/orders`, {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': 'chunked', 'transfer-encoding': 'chunked'}}, incoming => {
				incoming.resume();
				resolve(incoming.statusCode ?? 0);
			});
			outgoing.on('error', reject);
			outgoing.end(JSON.stringify({pad: 'x'.repeat(5000)}));
		});
		expect(status).toBe(413);
		expect(store.size).toBe(0);
	});

	test('toNodeHandler: a client that stops reading a large answer and leaves does not keep its request, or the answer, alive', async () => {
		const settled: Array<Promise<unknown>> = [];
		const handler = toNodeHandler(async () => new Response(new Uint8Array(16 * 1024 * 1024), {status: 200}));
		const url = await listen(createServer((request, response) => {
			settled.push(handler(request, response));
		}));
		await new Promise<void>((resolve, reject) => {
			const outgoing = httpRequest(url, {method: 'GET'}, incoming => {
				// Headers only: the client reads nothing of the body, then leaves.
				incoming.pause();
				outgoing.destroy();
				resolve();
			});
			outgoing.on('error', () => undefined);
			outgoing.on('close', resolve);
			outgoing.end();
			void reject;
		});
		await vi.waitFor(() => {
			expect(settled).toHaveLength(1);
		});
		await settled[0];
	});
});
