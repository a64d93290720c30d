import ky from 'ky';
import {describe, expect, test} from 'vitest';
import {createClient, OutcomeUnknownError} from '../../../src/index.js';
import {sendonceKy} from '../../../src/integrations/ky.js';
import {fast, useApiServer} from '../api-server.js';

const site = useApiServer();
const three = {...fast, retry: {...fast.retry, limit: 2}};

describe('ky with sendonceKy', () => {
	test('a per-call `retry: 2` (a number) keeps ky from retrying a "may have been sent" PUT: OutcomeUnknownError', async () => {
		site.server.faults.push({type: 'lose-reply'}, {type: 'error-before', status: 503});
		const api = ky.extend({prefixUrl: site.server.url, ...sendonceKy(createClient(three))});
		const error = await api.put('orders', {json: {order: 'rk-1'}, intent: 'order:rk1', retry: 2}).catch((error: unknown) => error);
		expect(error).toBeInstanceOf(OutcomeUnknownError);
		expect(site.server.keys).toHaveLength(2);
	});

	test('a per-call `retry: 2` on an intent DELETE: the unresolved intent is not sent again by ky', async () => {
		site.server.faults.push({type: 'lose-reply'}, {type: 'error-before', status: 503}, {type: 'error-before', status: 503}, {type: 'error-before', status: 503});
		const api = ky.extend({prefixUrl: site.server.url, ...sendonceKy(createClient(three))});
		const error = await api.delete('orders', {intent: 'cancel:rk2', retry: 2}).catch((error: unknown) => error);
		expect(error).toBeInstanceOf(OutcomeUnknownError);
		expect(site.server.keys).toHaveLength(2);
	});

	test('an app beforeRequest hook that returns a Request, before sendonceKy: the intent still carries a key', async () => {
		const api = ky.extend({prefixUrl: site.server.url, hooks: {beforeRequest: [request => new Request(request, {headers: {...Object.fromEntries(request.headers), 'x-app': '1'}})]}}).extend(sendonceKy(createClient(three)));
		await api.post('orders', {json: {order: 'rk-3'}, intent: 'order:rk3'}).json().catch(() => undefined);
		expect(site.server.keys).toHaveLength(1);
		expect(site.server.keys[0]).toBeTypeOf('string');
	});
});
