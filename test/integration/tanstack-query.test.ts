import * as newest from '@tanstack/query-core';
import {MutationObserver, QueryClient} from '@tanstack/query-core';
import * as lowest from 'query-core-min';
import {afterAll, afterEach, beforeAll, describe, expect, test} from 'vitest';
import {createClient, memoryStore, OutcomeUnknownError, RequestRefusedError, type ClientOptions, type SendOnceClient} from '../../src/index.js';
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

test('a retry after another mutate of the same scope succeeded resends its own intent, never the scope\'s next one: one key, one effect', async () => {
	const client = createClient({...fast, retry: {...fast.retry, limit: 1}});
	const {mutationFn} = intentMutation(client, {scope: (order: Order) => `checkout:${order.id}`, request: order => ({url: `${server.url}/orders`, json: {order: order.id}})});
	// Two mutations of one action (a double click, two components), each with its context, as TanStack 5.89 on passes it.
	const [first, second] = [{}, {}];
	const order = {id: 'tq-twice'};
	server.faults.push({type: 'error-before', status: 503}, {type: 'error-before', status: 503});
	await expect(mutationFn(order, first as never)).rejects.toBeInstanceOf(OutcomeUnknownError);
	await expect(mutationFn(order, second as never)).rejects.toBeInstanceOf(OutcomeUnknownError);

	// The app's retries: the first succeeds (and the intent's record is deleted), then the second.
	expect(await mutationFn(order, first as never)).toMatchObject({effects: 1});
	expect(await mutationFn(order, second as never)).toMatchObject({effects: 1});
	expect(new Set(server.keys).size).toBe(1);
	expect(server.effects.get('tq-twice')).toBe(1);
});

test('without `replace`, no onMutate is added: the app\'s own, from setMutationDefaults or defaultOptions, runs', async () => {
	const ran: string[] = [];
	const queryClient = new QueryClient({defaultOptions: {mutations: {onMutate: () => {
		ran.push('defaultOptions');
	}}}});
	queryClient.setMutationDefaults(['orders'], {onMutate: () => {
		ran.push('setMutationDefaults');
	}});
	const client = createClient(fast);
	const options = intentMutation(client, {mutationKey: ['orders'], scope: (order: Order) => `checkout:${order.id}`, request: order => ({url: `${server.url}/orders`, json: {order: order.id}})});
	expect('onMutate' in options).toBe(false);

	await new MutationObserver(queryClient, options).mutate({id: 'tq-defaults'});

	expect(ran).toEqual(['setMutationDefaults']);
	expect(server.effects.get('tq-defaults')).toBe(1);
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

/*
 * Issue 20: TanStack Query before 5.89 calls `mutationFn` without its context. One `mutate` must
 * stay one key across the app's own `retry`, on the newest query-core and on 5.0.0 alike.
 */
describe.each([['query-core', newest], ['query-core 5.0.0', lowest as unknown as typeof newest]])('%s: an app retry on a replace mutation (issue 20)', (_name, core) => {
	const config = {
		scope: (order: Order) => `checkout:${order.id}`,
		request: (order: Order) => ({url: `${server.url}/orders`, json: {order: order.id}}),
		replace: (order: Order) => order.asNew === true,
	};
	/** The app's options, made again at every render as `useMutation({...})` makes them. */
	const options = (client: SendOnceClient) => ({...intentMutation(client, config), retry: 2, retryDelay: 1});

	test.each([['without re-renders', false], ['re-rendered at every change, as React does', true]])('one mutate, one key: %s', async (_case, rerender) => {
		// The first try's reply is lost; the app's retry sends the same key, and gets the replay.
		server.faults.push({type: 'lose-reply'});
		const client = createClient({...fast, retry: {...fast.retry, limit: 1}});
		const observer = new core.MutationObserver(new core.QueryClient(), options(client));
		if (rerender) observer.subscribe(() => observer.setOptions(options(client)));

		expect(await observer.mutate({id: 'tq-new', asNew: true})).toMatchObject({effects: 1});
		expect(server.keys).toHaveLength(2);
		expect(new Set(server.keys).size).toBe(1);

		// The user chooses "order again as new": that mutate is a new key, and its retry keeps it.
		server.faults.push({type: 'lose-reply'});
		expect(await observer.mutate({id: 'tq-new', asNew: true})).toMatchObject({effects: 2});
		expect(server.keys).toHaveLength(4);
		expect(new Set(server.keys).size).toBe(2);
	});

	test('variables that are not objects: one key too', async () => {
		server.faults.push({type: 'lose-reply'});
		const client = createClient({...fast, retry: {...fast.retry, limit: 1}});
		const observer = new core.MutationObserver(new core.QueryClient(), {
			...intentMutation(client, {scope: (id: string) => `checkout:${id}`, request: id => ({url: `${server.url}/orders`, json: {order: id}}), replace: () => true}),
			retry: 2,
			retryDelay: 1,
		});
		expect(await observer.mutate('tq-plain')).toMatchObject({effects: 1});
		expect(server.keys).toHaveLength(2);
		expect(new Set(server.keys).size).toBe(1);
	});

	test.each([['an object', {id: 'tq-own'}], ['not an object', 'tq-own']])('with an `onMutate` of the app\'s own, variables that are %s: one key; or, where TanStack does not say which mutate a try is of, a TypeError before anything is sent', async (_case, variables) => {
		server.faults.push({type: 'lose-reply'});
		const client = createClient({...fast, retry: {...fast.retry, limit: 1}});
		const optimistic: unknown[] = [];
		const observer = new core.MutationObserver(new core.QueryClient(), {
			...intentMutation(client, {scope: () => 'checkout:tq-own', request: () => ({url: `${server.url}/orders`, json: {order: 'tq-own'}}), replace: () => true}),
			onMutate: (vars: unknown) => {
				optimistic.push(vars);
			},
			retry: 2,
			retryDelay: 1,
		});
		const outcome = await observer.mutate(variables).catch((error: unknown) => error);
		expect(optimistic).toEqual([variables]);
		// Whether this query-core tells `mutationFn` which mutate it is (5.89 on): the peer matrix may load 5.0 under either name.
		const saysWhich = await new core.MutationObserver(new core.QueryClient(), {mutationFn: async (_: unknown, context?: unknown) => context !== undefined}).mutate(undefined);
		if (saysWhich || typeof variables === 'object') {
			expect(outcome).toMatchObject({effects: 1});
			expect(server.keys).toHaveLength(2);
			expect(new Set(server.keys).size).toBe(1);
		} else {
			expect(outcome).toBeInstanceOf(TypeError);
			expect((outcome as Error).message).toMatch(/5\.89/);
			expect(server.requests).toEqual([]);
		}
	});

	test('variables that are not objects, without an app retry: replace is the user\'s choice, a new key', async () => {
		server.faults.push({type: 'lose-reply'}, {type: 'lose-reply'});
		const client = createClient({...fast, retry: {...fast.retry, limit: 1}});
		const observer = new core.MutationObserver(new core.QueryClient(), intentMutation(client, {scope: (id: string) => `checkout:${id}`, request: id => ({url: `${server.url}/orders`, json: {order: id}}), replace: () => true}));
		await expect(observer.mutate('tq-once')).rejects.toBeInstanceOf(OutcomeUnknownError);
		await expect(observer.mutate('tq-once')).rejects.toBeInstanceOf(OutcomeUnknownError);
		expect(server.keys).toHaveLength(2);
		expect(new Set(server.keys).size).toBe(2);
	});
});
