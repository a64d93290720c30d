import axios from 'axios';
import {expect, test} from 'vitest';
import {createClient, OutcomeUnknownError} from '../../../src/index.js';
import {sendonceAdapter} from '../../../src/integrations/axios.js';
import {fast, useApiServer} from '../api-server.js';

const site = useApiServer();

test('the caller aborts while the order is being placed: OutcomeUnknownError, not axios\' CanceledError', async () => {
	site.server.faults.push({type: 'slow', ms: 400});
	const api = axios.create({baseURL: site.server.url, adapter: sendonceAdapter(createClient(fast))});
	const controller = new AbortController();
	setTimeout(() => controller.abort(), 150);
	const error = await api.post('/orders', {order: 'rax-1'}, {intent: 'checkout:rax1', signal: controller.signal}).catch((error: unknown) => error);
	await new Promise(resolve => setTimeout(resolve, 500));
	expect(error).toBeInstanceOf(OutcomeUnknownError);
});
