import {MutationObserver, QueryClient} from '@tanstack/query-core';
import {afterAll, beforeAll, expect, test} from 'vitest';
import {createClient} from '../../../src/index.js';
import {intentMutation} from '../../../src/integrations/tanstack-query.js';
import {startContractServer, type ContractServer} from '../../server/contract-server.js';
import {fast} from '../api-server.js';

let server: ContractServer;
beforeAll(async () => {
	server = await startContractServer();
});
afterAll(async () => server.close());

// "Order again as new" (replace) and an app's own `retry`, spread after intentMutation.
test('an app retry on a replace mutation never sends the order under a second key', async () => {
	server.faults.push({type: 'lose-reply'}, {type: 'lose-reply'});
	const client = createClient({...fast, retry: {...fast.retry, limit: 1}});
	const observer = new MutationObserver(new QueryClient(), {
		...intentMutation(client, {scope: (id: string) => `checkout:${id}`, request: id => ({url: `${server.url}/orders`, json: {order: id}}), replace: () => true}),
		retry: 1,
		retryDelay: 1,
	});
	await observer.mutate('rtq-1').catch(() => undefined);
	expect(new Set(server.keys).size).toBe(1);
	expect(server.effects.get('rtq-1')).toBe(1);
});
