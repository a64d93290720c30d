import ky from 'ky';
import {expect, test} from 'vitest';
import {createClient, OutcomeUnknownError, UnresolvedIntentError} from '../../../src/index.js';
import {sendonceKy} from '../../../src/integrations/ky.js';
import {fast, useApiServer} from '../api-server.js';

const site = useApiServer();

// Scoped by method and URL, as documented: another body may not replace one that may have been sent.
test('with `all`, while a message may have been sent, another body to the same URL is refused, never sent', async () => {
	site.server.faults.push({type: 'lose-reply'}, {type: 'error-before', status: 503}, {type: 'error-before', status: 503});
	const api = ky.extend({prefixUrl: site.server.url, ...sendonceKy(createClient({...fast, retry: {...fast.retry, limit: 2}}), {all: true})});
	const first = await api.post('orders', {json: {order: 'all-1'}}).catch((error: unknown) => error);
	const second = await api.post('orders', {json: {order: 'all-2'}}).json().catch((error: unknown) => error);
	expect(first).toBeInstanceOf(OutcomeUnknownError);
	expect(second).toBeInstanceOf(UnresolvedIntentError);
	expect(site.server.effects.get('all-2')).toBeUndefined();
});
