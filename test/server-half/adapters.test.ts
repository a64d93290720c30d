import {createServer, type Server} from 'node:http';
import type {AddressInfo} from 'node:net';
import express from 'express';
import {afterEach, describe, expect, test, vi} from 'vitest';
import {expressIdempotency, idempotency, memoryKeyStore, toNodeHandler} from '../../src/server.js';

const servers: Server[] = [];
afterEach(async () => {
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

const post = async (url: string, key: string | undefined, body: unknown, headers: Record<string, string> = {}) =>
	fetch(url, {method: 'POST', headers: {'content-type': 'application/json', ...(key ? {'idempotency-key': key} : {}), ...headers}, body: JSON.stringify(body)});

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

	test('refuses a handler that is not a function', () => {
		expect(() => toNodeHandler('nope' as never)).toThrow(/^Expected `handler` to be a function, got string/);
	});
});

describe('expressIdempotency', () => {
	function app(options: Parameters<typeof expressIdempotency>[0], parser = true) {
		const effects: unknown[] = [];
		const started = {count: 0};
		// A route with `wait` answers once the test opens this.
		let open!: () => void;
		const opened = new Promise<void>(resolve => {
			open = resolve;
		});
		const api = express();
		const middleware = [...(parser ? [express.json()] : []), expressIdempotency({store: memoryKeyStore(), ...options})];
		api.post('/orders', ...middleware, (request, response) => {
			const body = request.body as {order?: number; fail?: boolean; wait?: boolean};
			started.count++;
			if (body.fail) throw new Error('route failed');
			effects.push(body);
			const reply = () => response.status(201).set('location', `/orders/${effects.length}`).json({id: effects.length, key: response.locals.idempotencyKey as unknown});
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
		expect(again.status).toBe(201);
		expect(again.headers.get('idempotent-replayed')).toBe('true');
		expect(again.headers.get('location')).toBe('/orders/1');
		expect(await again.json()).toEqual(await first.json());
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
		const {api, effects} = app({});
		const url = await listen(createServer(api));
		expect((await post(`${url}/orders`, 'e-3', {fail: true})).status).toBe(500);
		expect((await post(`${url}/orders`, 'e-3', {fail: true})).status).toBe(500);
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
		expect(preflight.headers.get('access-control-allow-headers')).toBe('Idempotency-Key, Content-Type');
		expect(answer.headers.get('access-control-allow-origin')).toBe('https://shop.test');
		expect(answer.headers.get('access-control-expose-headers')).toBe('Idempotent-Replayed, Retry-After');
	});

	test('without a body parser before it, it reads the body and hands the route parsed JSON', async () => {
		const {api, effects} = app({}, false);
		const url = await listen(createServer(api));
		await post(`${url}/orders`, 'e-5', {order: 5});
		await post(`${url}/orders`, 'e-5', {order: 5});
		expect(effects).toEqual([{order: 5}]);
	});
});
