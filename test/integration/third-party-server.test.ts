import type {AddressInfo} from 'node:net';
import type {Server} from 'node:http';
import express from 'express';
import {getSharedIdempotencyService, idempotency} from 'express-idempotency';
import {afterAll, afterEach, beforeAll, describe, expect, test} from 'vitest';
import {createClient, type ClientOptions} from '../../src/index.js';
import {FaultProxy} from '../server/fault-proxy.js';

// express-idempotency (npm) is a server we did not write. It differs from our contract the
// way real servers do: a replay carries no `Idempotent-Replayed` header, a key reused with
// another body gets 417 rather than 422, and errors pass through Express's error handler.
const effects = new Map<string, number>();
let slowNext = 0;
let app: Server;
let proxy: FaultProxy;

beforeAll(async () => {
	const api = express();
	api.use(express.json());
	api.post('/orders', idempotency(), async (request, response) => {
		if (getSharedIdempotencyService().isHit(request)) return;
		const {order} = request.body as {order: string};
		if (slowNext > 0) {
			await new Promise(resolve => setTimeout(resolve, slowNext));
			slowNext = 0;
		}

		effects.set(order, (effects.get(order) ?? 0) + 1);
		response.status(201).json({order, effects: effects.get(order)});
	});
	app = api.listen(0, '127.0.0.1');
	await new Promise(resolve => app.once('listening', resolve));
	proxy = await new FaultProxy(`http://127.0.0.1:${(app.address() as AddressInfo).port}`).listen();
});

afterAll(async () => {
	await proxy.close();
	app.closeAllConnections();
	await new Promise(resolve => app.close(resolve));
});

afterEach(() => {
	proxy.faults.length = 0;
});

const options = {store: 'memory', retry: {limit: 8, baseDelay: 5, maxDelay: 40}, timeout: 2000} satisfies ClientOptions;

describe('against express-idempotency, a middleware we did not write', () => {
	test('a lost reply is retried with the same key and performed once', async () => {
		const client = createClient(options);
		proxy.faults.push({type: 'lose-reply'});
		const intent = await client.intent('order', {url: `${proxy.url}/orders`, json: {order: 'x-1'}});

		// No replay header from this server: the replay reads as a first answer.
		expect(await intent.send()).toMatchObject({status: 'succeeded', replayed: false, attempts: 2, data: {order: 'x-1', effects: 1}});
		expect(effects.get('x-1')).toBe(1);
	});

	test('a 502 after the work is retried and performed once', async () => {
		const client = createClient(options);
		proxy.faults.push({type: 'error-after', status: 502}, {type: 'error-before', status: 503});
		const intent = await client.intent('order', {url: `${proxy.url}/orders`, json: {order: 'x-2'}});

		expect(await intent.send()).toMatchObject({status: 'succeeded', attempts: 3});
		expect(effects.get('x-2')).toBe(1);
	});

	test('its 409 while the first attempt runs makes the client wait; one effect', async () => {
		const client = createClient({...options, timeout: 50, retry: {limit: 30, baseDelay: 20, maxDelay: 100}});
		slowNext = 300;
		const intent = await client.intent('order', {url: `${proxy.url}/orders`, json: {order: 'x-3'}});

		expect(await intent.send()).toMatchObject({status: 'succeeded', data: {order: 'x-3', effects: 1}});
		expect(effects.get('x-3')).toBe(1);
	});

	test('its 417 for a reused key with another body is a definitive failure, never retried', async () => {
		const client = createClient({...options, generateKey: () => 'fixed-key-417'});
		const first = await client.intent('a', {url: `${proxy.url}/orders`, json: {order: 'x-4'}});
		expect(await first.send()).toMatchObject({status: 'succeeded'});

		// A second scope reusing the key (only a broken generateKey would): the server refuses.
		const second = await client.intent('b', {url: `${proxy.url}/orders`, json: {order: 'x-5'}});
		expect(await second.send()).toMatchObject({status: 'failed', response: {status: 417}, attempts: 1});
		expect(effects.get('x-5')).toBeUndefined();
	});
});
