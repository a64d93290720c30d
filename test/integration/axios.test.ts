import axios from 'axios';
import {describe, expect, test} from 'vitest';
import {createClient, OutcomeUnknownError, type ClientOptions} from '../../src/index.js';
import {sendonceAdapter} from '../../src/integrations/axios.js';
import {fast, useApiServer} from './api-server.js';
import {bytesOf, PNG} from './binary.js';

/*
 * sendonce/axios (issue 13): `axios.create({adapter: sendonceAdapter(client)})`, against a real
 * local server that honours the contract.
 */

const site = useApiServer();

const api = (options: ClientOptions = fast) => axios.create({baseURL: site.server.url, adapter: sendonceAdapter(createClient(options))});

describe('axios with sendonceAdapter', () => {
	test('a lost reply, then a 503: the same key, one effect, and axios parses the replayed answer', async () => {
		site.server.faults.push({type: 'lose-reply'}, {type: 'error-before', status: 503});
		const response = await api().post<{order: string; effects: number}>('/orders', {order: 'ax-1'}, {intent: 'checkout:42'});

		expect(response.status).toBe(201);
		expect(response.data).toMatchObject({order: 'ax-1', effects: 1});
		expect(response.headers['idempotent-replayed']).toBe('true');
		expect(site.server.effects.get('ax-1')).toBe(1);
		expect(site.server.keys).toHaveLength(3);
		expect(new Set(site.server.keys).size).toBe(1);
		expect(site.server.requests[0]!.headers['content-type']).toBe('application/json');
	});

	test('may have been sent: OutcomeUnknownError, not an AxiosError, carrying the intent', async () => {
		site.server.faults.push({type: 'lose-reply'}, {type: 'error-before', status: 503});
		const error = await api({...fast, retry: {...fast.retry, limit: 2}}).put('/orders', {order: 'ax-2'}, {intent: 'order:2'}).catch((error: unknown) => error);

		expect(error).toBeInstanceOf(OutcomeUnknownError);
		expect(axios.isAxiosError(error)).toBe(false);
		expect(error).toMatchObject({result: {status: 'unresolved', reason: 'exhausted'}});
		expect((error as OutcomeUnknownError).intent.key).toBe(site.server.keys[0]);
		expect(site.server.keys).toHaveLength(2);
		expect(site.server.effects.get('ax-2')).toBe(1);
	});

	test('a definitive 4xx is an AxiosError, as axios would reject it, with the parsed body', async () => {
		const error = await api().patch('/orders', {order: 'ax-3', reject: 'sold out'}, {intent: 'order:3'}).catch((error: unknown) => error);

		expect(axios.isAxiosError(error)).toBe(true);
		expect(error).toMatchObject({code: 'ERR_BAD_REQUEST', response: {status: 400, data: {error: 'invalid order', reason: 'sold out'}}});
		expect(site.server.requests).toHaveLength(1);
	});

	test('validateStatus and responseType are axios\'s', async () => {
		const refused = await api().post('/orders', {order: 'ax-4', reject: 'no'}, {intent: 'order:4', validateStatus: () => true, responseType: 'text', transformResponse: [(data: unknown) => data]});
		expect(refused.status).toBe(400);
		expect(refused.data).toBe('{"error":"invalid order","reason":"no"}');
	});

	test('a POST without `intent` goes to axios\' own adapter: no key', async () => {
		const response = await api().post('/orders', {order: 'ax-5'});
		expect(response.data).toMatchObject({order: 'ax-5'});
		expect(site.server.keys).toEqual([undefined]);
	});

	test('a GET goes to axios\' own adapter, even with an `intent`', async () => {
		const response = await api().get('/list', {intent: 'ignored', params: {page: 2}});
		expect(response.data).toEqual({orders: []});
		expect(response.headers['x-seen-key']).toBe('');
		expect(site.server.requests).toEqual([]);
	});

	test('params and baseURL make the stored URL', async () => {
		await api().post('/orders', {order: 'ax-6'}, {intent: 'order:6', params: {source: 'cart'}});
		expect(site.server.requests[0]!.path).toBe('/orders?source=cart');
	});
});

describe('a binary answer, byte for byte (issue 20)', () => {
	const make = () => axios.create({baseURL: site.server.url, adapter: sendonceAdapter(createClient(fast))});

	test('responseType \'arraybuffer\' gives the bytes the server sent', async () => {
		const response = await make().post<ArrayBuffer>('/orders', {order: 'ax-bytes', answer: 'png'}, {intent: 'ax-bytes', responseType: 'arraybuffer'});
		expect(response.headers['content-type']).toBe('image/png');
		expect(await bytesOf(response.data)).toEqual(site.server.requests.at(-1)!.sent);
	});

	test('responseType \'blob\' gives a Blob of those bytes', async () => {
		const response = await make().post<Blob>('/orders', {order: 'ax-blob', answer: 'octets'}, {intent: 'ax-blob', responseType: 'blob'});
		expect(response.data).toBeInstanceOf(Blob);
		expect(await bytesOf(response.data)).toEqual(PNG);
		expect(site.server.requests.at(-1)!.sent).toEqual(PNG);
	});
});
