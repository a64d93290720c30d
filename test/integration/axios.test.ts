import axios from 'axios';
import {afterAll, afterEach, beforeAll, describe, expect, test} from 'vitest';
import {createClient, OutcomeUnknownError, type ClientOptions} from '../../src/index.js';
import {sendonceAdapter} from '../../src/integrations/axios.js';
import {startContractServer, type ContractServer} from '../server/contract-server.js';

/*
 * sendonce/axios (issue 13): `axios.create({adapter: sendonceAdapter(client)})`, against a real
 * local server that honours the contract.
 */

let server: ContractServer;
beforeAll(async () => {
	server = await startContractServer({
		serve(request, response) {
			if (request.method !== 'GET') return false;
			response.writeHead(200, {'content-type': 'application/json', 'x-seen-key': String(request.headers['idempotency-key'] ?? '')});
			response.end(JSON.stringify({orders: []}));
			return true;
		},
	});
});
afterAll(async () => server.close());
afterEach(() => {
	server.reset();
});

const fast = {store: 'memory', retry: {limit: 3, baseDelay: 1, maxDelay: 5, budget: false}, timeout: 2000} satisfies ClientOptions;
const api = (options: ClientOptions = fast) => axios.create({baseURL: server.url, adapter: sendonceAdapter(createClient(options))});

describe('axios with sendonceAdapter', () => {
	test('a lost reply, then a 503: the same key, one effect, and axios parses the replayed answer', async () => {
		server.faults.push({type: 'lose-reply'}, {type: 'error-before', status: 503});
		const response = await api().post<{order: string; effects: number}>('/orders', {order: 'ax-1'}, {intent: 'checkout:42'});

		expect(response.status).toBe(201);
		expect(response.data).toMatchObject({order: 'ax-1', effects: 1});
		expect(response.headers['idempotent-replayed']).toBe('true');
		expect(server.effects.get('ax-1')).toBe(1);
		expect(server.keys).toHaveLength(3);
		expect(new Set(server.keys).size).toBe(1);
		expect(server.requests[0]!.headers['content-type']).toBe('application/json');
	});

	test('may have been sent: OutcomeUnknownError, not an AxiosError, carrying the intent', async () => {
		server.faults.push({type: 'lose-reply'}, {type: 'error-before', status: 503});
		const error = await api({...fast, retry: {...fast.retry, limit: 2}}).put('/orders', {order: 'ax-2'}, {intent: 'order:2'}).catch((error: unknown) => error);

		expect(error).toBeInstanceOf(OutcomeUnknownError);
		expect(axios.isAxiosError(error)).toBe(false);
		expect(error).toMatchObject({result: {status: 'unresolved', reason: 'exhausted'}});
		expect((error as OutcomeUnknownError).intent.key).toBe(server.keys[0]);
		expect(server.keys).toHaveLength(2);
		expect(server.effects.get('ax-2')).toBe(1);
	});

	test('a definitive 4xx is an AxiosError, as axios would reject it, with the parsed body', async () => {
		const error = await api().patch('/orders', {order: 'ax-3', reject: 'sold out'}, {intent: 'order:3'}).catch((error: unknown) => error);

		expect(axios.isAxiosError(error)).toBe(true);
		expect(error).toMatchObject({code: 'ERR_BAD_REQUEST', response: {status: 400, data: {error: 'invalid order', reason: 'sold out'}}});
		expect(server.requests).toHaveLength(1);
	});

	test('validateStatus and responseType are axios\'s', async () => {
		const refused = await api().post('/orders', {order: 'ax-4', reject: 'no'}, {intent: 'order:4', validateStatus: () => true, responseType: 'text', transformResponse: [(data: unknown) => data]});
		expect(refused.status).toBe(400);
		expect(refused.data).toBe('{"error":"invalid order","reason":"no"}');
	});

	test('a POST without `intent` goes to axios\' own adapter: no key', async () => {
		const response = await api().post('/orders', {order: 'ax-5'});
		expect(response.data).toMatchObject({order: 'ax-5'});
		expect(server.keys).toEqual([undefined]);
	});

	test('a GET goes to axios\' own adapter, even with an `intent`', async () => {
		const response = await api().get('/list', {intent: 'ignored', params: {page: 2}});
		expect(response.data).toEqual({orders: []});
		expect(response.headers['x-seen-key']).toBe('');
		expect(server.requests).toEqual([]);
	});

	test('params and baseURL make the stored URL', async () => {
		await api().post('/orders', {order: 'ax-6'}, {intent: 'order:6', params: {source: 'cart'}});
		expect(server.requests[0]!.path).toBe('/orders?source=cart');
	});
});
