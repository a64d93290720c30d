import {afterAll, afterEach, beforeAll, describe, expect, test} from 'vitest';
import {createClient, memoryStore, UnresolvedIntentError, type ClientOptions, type IntentStore} from '../../src/index.js';
import {startContractServer, type ContractServer} from '../server/contract-server.js';

let server: ContractServer;
beforeAll(async () => {
	server = await startContractServer();
});
afterAll(async () => server.close());
afterEach(() => server.reset());

const fast = {retry: {limit: 5, baseDelay: 1, maxDelay: 5}, timeout: 2000} satisfies ClientOptions;

describe('one effect, whatever the network does', () => {
	test('lost reply after the work: retried with the same key, replayed, one effect', async () => {
		const client = createClient({...fast, store: 'memory'});
		server.faults.push({type: 'lose-reply'});
		const intent = await client.intent('order', {url: `${server.url}/orders`, json: {order: 'a-1'}});
		const result = await intent.send();

		expect(result).toMatchObject({status: 'succeeded', replayed: true, attempts: 2});
		expect(server.effects.get('a-1')).toBe(1);
		expect(server.keys).toEqual([intent.key, intent.key]);
	});
});
