import {MutationObserver, QueryClient} from '@tanstack/query-core';
import {afterAll, afterEach, beforeAll, describe, expect, test} from 'vitest';
import {createClient, memoryStore, OutcomeUnknownError, RequestRefusedError, type ClientOptions} from '../../src/index.js';
import {intentMutation, resumeMutations, type ResumedIntent} from '../../src/integrations/tanstack-query.js';
import {startContractServer, type ContractServer} from '../server/contract-server.js';
import {fast} from './api-server.js';

/*
 * sendonce/tanstack-query (issue 13): mutations whose mutationFn sends an intent, against a real
 * local server that honours the contract.
 */

let server: ContractServer;
beforeAll(async () => {
	server = await startContractServer();
});
afterAll(async () => server.close());
afterEach(() => {
	server.reset();
});

interface Order {
	id: string;
	reject?: string;
	/** The user chose "order again as new". */
	asNew?: boolean;
}

/** A mutation observer over `intentMutation`, and what its callbacks received. */
function checkout(options: ClientOptions = fast) {
	const client = createClient(options);
	const errors: Error[] = [];
	const observer = new MutationObserver(new QueryClient(), {
		...intentMutation(client, {scope: (order: Order) => `checkout:${order.id}`, request: order => ({url: `${server.url}/orders`, json: {order: order.id, ...(order.reject ? {reject: order.reject} : {})}}), replace: order => order.asNew === true}),
		onError: error => {
			errors.push(error);
		},
	});
	return {client, observer, errors};
}

describe('intentMutation', () => {
	test('a lost reply, then a 503: the same key, one effect, and the mutation has the body', async () => {
		server.faults.push({type: 'lose-reply'}, {type: 'error-before', status: 503});
		const {observer} = checkout();
		const data = await observer.mutate({id: 'tq-1'});

		expect(data).toMatchObject({order: 'tq-1', effects: 1});
		expect(observer.getCurrentResult()).toMatchObject({status: 'success', failureCount: 0});
		expect(server.effects.get('tq-1')).toBe(1);
		expect(server.keys).toHaveLength(3);
		expect(new Set(server.keys).size).toBe(1);
	});

	test('may have been sent: onError gets OutcomeUnknownError, TanStack does not retry, and mutate again sends the same key', async () => {
		server.faults.push({type: 'lose-reply'}, {type: 'error-before', status: 503});
		const {observer, errors} = checkout({...fast, retry: {...fast.retry, limit: 2}});
		await expect(observer.mutate({id: 'tq-2'})).rejects.toBeInstanceOf(OutcomeUnknownError);

		expect(errors).toHaveLength(1);
		expect(errors[0]).toMatchObject({name: 'OutcomeUnknownError', result: {status: 'unresolved', reason: 'exhausted'}});
		expect(observer.getCurrentResult().failureCount).toBe(1);
		expect(server.keys).toHaveLength(2);

		expect(await observer.mutate({id: 'tq-2'})).toMatchObject({order: 'tq-2', effects: 1});
		expect(server.effects.get('tq-2')).toBe(1);
		expect(new Set(server.keys).size).toBe(1);
	});

	test('replace, on the user\'s choice, sends the scope\'s action again with a new key', async () => {
		server.faults.push({type: 'lose-reply'});
		const {observer} = checkout({...fast, retry: {...fast.retry, limit: 1}});
		await expect(observer.mutate({id: 'tq-5'})).rejects.toBeInstanceOf(OutcomeUnknownError);
		expect(await observer.mutate({id: 'tq-5', asNew: true})).toMatchObject({effects: 2});

		expect(new Set(server.keys).size).toBe(2);
	});

	test('a definitive 4xx: RequestRefusedError, with the server\'s reason, sent once', async () => {
		const {observer, errors} = checkout();
		await expect(observer.mutate({id: 'tq-3', reject: 'sold out'})).rejects.toBeInstanceOf(RequestRefusedError);

		expect(errors[0]).toMatchObject({response: {status: 400}, data: {reason: 'sold out'}});
		expect(server.requests).toHaveLength(1);
	});
});

describe('resumeMutations', () => {
	test('an intent a reload interrupted is sent with its key, shown as a mutation with meta.sendonce', async () => {
		const store = memoryStore();
		// The page before the reload wrote the intent and was gone before its first byte.
		const before = createClient({...fast, store});
		const {key} = await before.intent('checkout:tq-4', {url: `${server.url}/orders`, json: {order: 'tq-4'}});

		const queryClient = new QueryClient();
		const seen: Array<{status: string; sendonce: unknown}> = [];
		queryClient.getMutationCache().subscribe(({mutation}) => {
			if (mutation) seen.push({status: mutation.state.status, sendonce: mutation.meta?.sendonce});
		});
		await resumeMutations(queryClient, createClient({...fast, store}));

		const [mutation] = queryClient.getMutationCache().findAll({mutationKey: ['sendonce']});
		expect(mutation?.meta?.sendonce).toEqual({scope: 'checkout:tq-4', key} satisfies ResumedIntent);
		expect(mutation?.state).toMatchObject({status: 'success', data: {order: 'tq-4', effects: 1}});
		expect(seen.map(({status}) => status)).toContain('pending');
		expect(server.keys).toEqual([key]);
		expect(await store.list()).toEqual([]);
	});

	test('nothing interrupted: no mutation', async () => {
		const queryClient = new QueryClient();
		await resumeMutations(queryClient, createClient(fast));
		expect(queryClient.getMutationCache().getAll()).toEqual([]);
	});
});
