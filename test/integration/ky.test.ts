import ky, {HTTPError} from 'ky';
import {describe, expect, test} from 'vitest';
import {createClient, OutcomeUnknownError, type ClientOptions} from '../../src/index.js';
import {sendonceKy} from '../../src/integrations/ky.js';
import {fast, useApiServer} from './api-server.js';

/*
 * sendonce/ky (issue 13): `ky.extend(sendonceKy(client))`, against a real local server that
 * honours the contract.
 */

const site = useApiServer();

const api = (options: ClientOptions = fast, all = false) => ky.extend({prefixUrl: site.server.url, retry: {limit: 2, backoffLimit: 1}, ...sendonceKy(createClient(options), {all})});

describe('ky with sendonceKy', () => {
	test('a lost reply, then a 503: the same key, one effect, and ky parses the replayed answer', async () => {
		site.server.faults.push({type: 'lose-reply'}, {type: 'error-before', status: 503});
		const order = await api().post('orders', {json: {order: 'ky-1'}, intent: 'checkout:42'}).json<{order: string; effects: number}>();

		expect(order).toMatchObject({order: 'ky-1', effects: 1});
		expect(site.server.effects.get('ky-1')).toBe(1);
		expect(site.server.keys).toHaveLength(3);
		expect(new Set(site.server.keys).size).toBe(1);
		expect(site.server.requests[0]!.headers['content-type']).toBe('application/json');
	});

	test('may have been sent: OutcomeUnknownError, and ky does not retry it, not even a PUT', async () => {
		site.server.faults.push({type: 'lose-reply'}, {type: 'error-before', status: 503});
		const error = await api({...fast, retry: {...fast.retry, limit: 2}}).put('orders', {json: {order: 'ky-2'}, intent: 'order:2'}).catch((error: unknown) => error);

		expect(error).toBeInstanceOf(OutcomeUnknownError);
		expect(error).toMatchObject({result: {status: 'unresolved', reason: 'exhausted'}});
		expect((error as OutcomeUnknownError).intent.key).toBe(site.server.keys[0]);
		expect(site.server.keys).toHaveLength(2);
		expect(site.server.effects.get('ky-2')).toBe(1);
	});

	test('a definitive 4xx is ky\'s HTTPError, with the server\'s body, sent once', async () => {
		const error = await api().delete('orders', {json: {order: 'ky-3', reject: 'sold out'}, intent: 'order:3'}).catch((error: unknown) => error);

		expect(error).toBeInstanceOf(HTTPError);
		expect((error as HTTPError).response.status).toBe(400);
		expect(await (error as HTTPError).response.json()).toEqual({error: 'invalid order', reason: 'sold out'});
		expect(site.server.requests).toHaveLength(1);
	});

	test('a POST without `intent` is plain ky: no key', async () => {
		const order = await api().post('orders', {json: {order: 'ky-4'}}).json();
		expect(order).toMatchObject({order: 'ky-4'});
		expect(site.server.keys).toEqual([undefined]);
	});

	test('with `all`, every POST is an intent, scoped by its method and URL', async () => {
		site.server.faults.push({type: 'lose-reply'});
		const order = await api(fast, true).post('orders', {json: {order: 'ky-5'}}).json();

		expect(order).toMatchObject({order: 'ky-5', effects: 1});
		expect(site.server.keys).toHaveLength(2);
		expect(new Set(site.server.keys).size).toBe(1);
	});

	test('a GET passes through to ky, without a key', async () => {
		const response = await api(fast, true).get('list');
		expect(await response.json()).toEqual({orders: []});
		expect(response.headers.get('x-seen-key')).toBe('');
		expect(site.server.requests).toEqual([]);
	});
});
