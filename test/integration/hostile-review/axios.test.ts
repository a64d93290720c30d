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
	const placing = api.post('/orders', {order: 'rax-1'}, {intent: 'checkout:rax1', signal: controller.signal}).catch((error: unknown) => error);
	await expect.poll(() => site.server.inFlight).toBe(1);
	controller.abort();
	expect(await placing).toBeInstanceOf(OutcomeUnknownError);
	// The work the abort could not stop still ends once, on the server.
	await expect.poll(() => site.server.effects.get('rax-1')).toBe(1);
});
