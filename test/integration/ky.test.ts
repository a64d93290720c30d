import ky, {HTTPError} from 'ky';
import kyMin from 'ky-min';
import {describe, expect, test} from 'vitest';
import {createClient, OutcomeUnknownError, type ClientOptions} from '../../src/index.js';
import {sendonceKy} from '../../src/integrations/ky.js';
import {fast, useApiServer} from './api-server.js';
import {bytesOf, PNG} from './binary.js';

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

/*
 * Issue 20, on the newest ky 1.14.x and the lowest the peer range admits (`ky-min`, 1.14.0).
 */
describe.each([['ky', ky], ['ky 1.14.0', kyMin as unknown as typeof ky]])('%s with sendonceKy (issue 20)', (_name, kyOf) => {
	/** An app's own hook that hands ky a new Request: ky then skips the hooks after it, sendonceKy's too. */
	const rebuild = (request: Request) => new Request(request, {headers: {...Object.fromEntries(request.headers), 'x-app': '1'}});

	test('arrayBuffer() and blob() give the bytes the server sent', async () => {
		const api = kyOf.create({prefixUrl: site.server.url}).extend(sendonceKy(createClient(fast)));
		const buffer = await api.post('orders', {json: {order: 'ky-bytes', answer: 'png'}, intent: 'ky-bytes'}).arrayBuffer();
		expect(await bytesOf(buffer)).toEqual(site.server.requests[0]!.sent);
		const blob = await api.post('orders', {json: {order: 'ky-blob', answer: 'octets'}, intent: 'ky-blob'}).blob();
		expect(blob.type).toBe('application/octet-stream');
		expect(await bytesOf(blob)).toEqual(site.server.requests[1]!.sent);
		expect(site.server.requests[1]!.sent).toEqual(PNG);
	});

	test('an app hook returns a Request: ky\'s own timeout never fires for the intent, the order comes back', async () => {
		site.server.faults.push({type: 'slow', ms: 300});
		const api = kyOf.create({prefixUrl: site.server.url, timeout: 50, hooks: {beforeRequest: [rebuild]}}).extend(sendonceKy(createClient(fast)));
		const order = await api.post('orders', {json: {order: 'ky-slow'}, intent: 'ky-slow'}).json();

		expect(order).toMatchObject({order: 'ky-slow', effects: 1});
		expect(site.server.requests).toHaveLength(1);
		expect(site.server.requests[0]!.headers['x-app']).toBe('1');
	});

	test('an app hook returns a Request, and sendonce\'s retries run out: OutcomeUnknownError, never ky\'s TimeoutError', async () => {
		site.server.faults.push({type: 'slow', ms: 600});
		// ky would give up at 100 ms; sendonce's one attempt waits 300 ms for its answer.
		const client = createClient({...fast, timeout: 300, retry: {...fast.retry, limit: 1}});
		const api = kyOf.create({prefixUrl: site.server.url, timeout: 100, hooks: {beforeRequest: [rebuild]}}).extend(sendonceKy(client));
		const error = await api.post('orders', {json: {order: 'ky-unsure'}, intent: 'ky-unsure'}).json().catch((error: unknown) => error);

		expect(error).toBeInstanceOf(OutcomeUnknownError);
		expect(error).toMatchObject({result: {status: 'unresolved', reason: 'exhausted', error: {name: 'TimeoutError'}}});
		expect(site.server.keys).toEqual([(error as OutcomeUnknownError).intent.key]);
		await expect.poll(() => site.server.inFlight).toBe(0);
	});

	test('a call that is not an intent keeps a timeout: sendonceKy\'s `timeout`, as ky\'s TimeoutError', async () => {
		site.server.faults.push({type: 'slow', ms: 300});
		const api = kyOf.create({prefixUrl: site.server.url, retry: 0, hooks: {beforeRequest: [rebuild]}}).extend(sendonceKy(createClient(fast), {timeout: 50}));
		const error = await api.post('orders', {json: {order: 'ky-plain'}}).catch((error: unknown) => error);

		expect(error).toMatchObject({name: 'TimeoutError'});
		expect(site.server.keys).toEqual([undefined]);
		await expect.poll(() => site.server.inFlight).toBe(0);
	});

	test('a longer `timeout` given to ky for a call that is not an intent is ky\'s, not capped by sendonceKy\'s', async () => {
		site.server.faults.push({type: 'slow', ms: 300});
		const api = kyOf.create({prefixUrl: site.server.url, retry: 0}).extend(sendonceKy(createClient(fast), {timeout: 50}));
		const response = await api.post('orders', {json: {order: 'ky-long'}, timeout: 5000});

		expect(response.status).toBe(201);
		expect(site.server.keys).toEqual([undefined]);
	});
});
