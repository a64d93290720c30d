import axios from 'axios';
import ky from 'ky';
import {afterAll, afterEach, beforeAll, describe, expect, test} from 'vitest';
import {createClient, memoryStore, OutcomeUnknownError, type ClientOptions, type IntentStore, type SendOnceClient, type SendOnceEvent} from '../../src/index.js';
import {sendonceAdapter} from '../../src/integrations/axios.js';
import {createFetch} from '../../src/integrations/fetch.js';
import {sendonceKy} from '../../src/integrations/ky.js';
import {intentMutation} from '../../src/integrations/tanstack-query.js';
import {startContractServer, type ContractServer} from '../server/contract-server.js';

/*
 * `intent.check()` (issue 33) against a real server that answers checks (`sendonce/server` on a
 * memory store): what the server counted, which requests it saw, what the store holds.
 */

let server: ContractServer;
let plain: ContractServer;
/** Orders whose next run answers 503 after it may have run: the key is released. */
const failNext = new Set<string>();
beforeAll(async () => {
	server = await startContractServer({checks: true, work: body => (failNext.delete((body as {order: string}).order) ? {status: 503, body: '{"error":"down"}'} : undefined)});
	// The same contract, without the extension: it must never see a check.
	plain = await startContractServer();
});
afterAll(async () => {
	await server.close();
	await plain.close();
});
afterEach(() => {
	server.reset();
	plain.reset();
});

const fast = {retry: {limit: 2, baseDelay: 1, maxDelay: 5, budget: false}, timeout: 2000} satisfies ClientOptions;

function setUp(options: ClientOptions = {}) {
	const store: IntentStore = memoryStore();
	const events: SendOnceEvent[] = [];
	const client = createClient({...fast, store, onEvent: event => events.push(event), ...options});
	return {store, client, events};
}

const order = (at: ContractServer, id: string) => ({url: `${at.url}/orders`, json: {order: id}});
const checksSeen = (at: ContractServer) => at.requests.filter(request => request.headers['idempotency-check'] !== undefined);

describe('a server that answers checks', () => {
	test('the reply was lost after the work: check settles the intent with the stored answer, and the server counted 1', async () => {
		const {client, store} = setUp({checks: true});
		server.faults.push({type: 'lose-reply'}, {type: 'drop-before'});
		const intent = await client.intent('order', order(server, 'a'));
		expect((await intent.send()).status).toBe('unresolved');

		const found = await intent.check();
		expect(found).toMatchObject({status: 'succeeded', replayed: true, response: {status: 201}, data: {order: 'a'}});
		expect(intent.state).toBe('succeeded');
		expect(server.effects.get('a')).toBe(1);
		const [check] = checksSeen(server);
		expect(check).toMatchObject({method: 'POST', key: intent.key, body: ''});
		expect(check!.headers['idempotency-check']).toMatch(new RegExp(`^created=${intent.createdAt}, age=\\d+$`));
		expect(check!.headers['content-type']).toBeUndefined();
		await expect.poll(async () => store.list()).toEqual([]);
	});

	test('the request was lost before the server: check says not-sent, the late original runs nothing, and a new intent sends it once', async () => {
		const {client, store, events} = setUp({checks: true});
		server.faults.push({type: 'drop-before'}, {type: 'drop-before'});
		const intent = await client.intent('order', order(server, 'b'));
		expect((await intent.send()).status).toBe('unresolved');

		const found = await intent.check();
		expect(found).toMatchObject({status: 'not-sent', key: intent.key});
		expect(intent.state).toBe('not-sent');
		expect(intent.snapshot.mayHaveBeenSent).toBe(false);
		expect(await store.list()).toEqual([]);
		expect(events).toContainEqual({type: 'checked', key: intent.key, scope: 'order', outcome: 'not-sent'});

		// The original, held in a proxy and delivered now: same key, same bytes.
		const late = await fetch(`${server.url}/orders`, {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': intent.key}, body: JSON.stringify({order: 'b'})});
		expect(late.status).toBe(410);
		expect(late.headers.get('idempotency-status')).toBe('closed');
		expect(server.effects.get('b')).toBeUndefined();

		const again = await client.send('order', order(server, 'b'));
		expect(again).toMatchObject({status: 'succeeded'});
		expect(again.key).not.toBe(intent.key);
		expect(server.effects.get('b')).toBe(1);
	});

	test('learned from an earlier answer of the same URL, with no option: a check is sent', async () => {
		const {client} = setUp();
		expect((await client.send('first', order(server, 'c0'))).status).toBe('succeeded');
		server.faults.push({type: 'drop-before'}, {type: 'drop-before'});
		const intent = await client.intent('order', order(server, 'c'));
		expect((await intent.send()).status).toBe('unresolved');
		expect(intent.snapshot.state).toBe('unresolved');

		expect(await intent.check()).toMatchObject({status: 'not-sent'});
		expect(checksSeen(server)).toHaveLength(1);
	});

	test('learned by an answer to the intent itself, and kept with it in the store: a new client (a reload) checks it', async () => {
		let finish!: () => void;
		const held = new Promise<void>(resolve => {
			finish = resolve;
		});
		const {client, store} = setUp({timeout: 200});
		// The first attempt times out while the server works; the second gets its 409, which says so.
		server.faults.push({type: 'hold', until: held});
		const intent = await client.intent('order', order(server, 'd'));
		expect((await intent.send())).toMatchObject({status: 'unresolved', response: {status: 409}});
		finish();
		await expect.poll(() => server.effects.get('d')).toBe(1);
		expect((await store.get('intent:order') as {checks?: number}).checks).toBe(86_400);

		const reloaded = createClient({...fast, store});
		const found = await (await reloaded.get('order'))!.check();
		expect(found).toMatchObject({status: 'succeeded', replayed: true});
		expect(server.effects.get('d')).toBe(1);
	});

	test('a handler that failed after it may have run: unknown, reason released, and Retry runs it again with the key', async () => {
		const {client} = setUp({checks: true});
		server.faults.push({type: 'drop-before'}, {type: 'drop-before'});
		const intent = await client.intent('order', order(server, 'e'));
		await intent.send();
		// A request with the key that claimed it and gave it up (a 5xx answered after the work started).
		failNext.add('e');
		const released = await fetch(`${server.url}/orders`, {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': intent.key}, body: JSON.stringify({order: 'e'})});
		expect(released.status).toBe(503);

		expect(await intent.check()).toEqual({status: 'unknown', key: intent.key, reason: 'released'});
		expect(intent.state).toBe('unresolved');
		expect((await intent.send()).status).toBe('succeeded');
		expect(server.effects.get('e')).toBe(1);
	});

	test('while the first request still runs: running, and nothing changes', async () => {
		let finish!: () => void;
		const held = new Promise<void>(resolve => {
			finish = resolve;
		});
		const {client} = setUp({checks: true, timeout: 100});
		server.faults.push({type: 'hold', until: held}, {type: 'drop-before'});
		const intent = await client.intent('order', order(server, 'f'));
		expect((await intent.send()).status).toBe('unresolved');

		expect(await intent.check()).toMatchObject({status: 'running', key: intent.key});
		expect(intent.state).toBe('unresolved');
		finish();
		await expect.poll(() => server.effects.get('f')).toBe(1);
		expect(await intent.check()).toMatchObject({status: 'succeeded'});
	});

	test('a send with a key a check closed settles not-sent: nothing ran', async () => {
		const {client, store} = setUp({checks: true});
		server.faults.push({type: 'drop-before'}, {type: 'drop-before'});
		const intent = await client.intent('order', order(server, 'g'));
		await intent.send();
		// Another page's check closed it; this page still holds the intent, as it was.
		const closing = await fetch(`${server.url}/orders`, {method: 'POST', headers: {'idempotency-key': intent.key, 'idempotency-check': `created=${intent.createdAt}`}});
		expect(closing.headers.get('idempotency-status')).toBe('closed');

		expect(await intent.send()).toMatchObject({status: 'not-sent', response: {status: 410}});
		expect(server.effects.get('g')).toBeUndefined();
		expect(await store.list()).toEqual([]);
	});

	test('calls while a check runs share it: one check reaches the server', async () => {
		const {client} = setUp({checks: true});
		server.faults.push({type: 'drop-before'}, {type: 'drop-before'});
		const intent = await client.intent('order', order(server, 'h'));
		await intent.send();
		const [one, two] = await Promise.all([intent.check(), intent.check()]);
		expect(one).toBe(two);
		expect(checksSeen(server)).toHaveLength(1);
		// Settled: asked again, the same answer, and nothing sent.
		expect(await intent.check()).toBe(one);
		expect(checksSeen(server)).toHaveLength(1);
	});
});

describe('a server that never said it answers checks', () => {
	test('nothing is asked: unknown, reason not-offered, and the server saw no request without its body', async () => {
		const {client} = setUp();
		plain.faults.push({type: 'drop-before'}, {type: 'drop-before'});
		const intent = await client.intent('order', order(plain, 'p'));
		expect((await intent.send()).status).toBe('unresolved');
		const seen = plain.requests.length;

		expect(await intent.check()).toEqual({status: 'unknown', key: intent.key, reason: 'not-offered'});
		expect(plain.requests).toHaveLength(seen);
		expect(intent.state).toBe('unresolved');
	});

	test('`checks: false` never asks, even where the server said it answers', async () => {
		const {client} = setUp({checks: false});
		expect((await client.send('first', order(server, 'q0'))).status).toBe('succeeded');
		server.faults.push({type: 'drop-before'}, {type: 'drop-before'});
		const intent = await client.intent('order', order(server, 'q'));
		await intent.send();
		expect(await intent.check()).toMatchObject({status: 'unknown', reason: 'not-offered'});
		expect(checksSeen(server)).toHaveLength(0);
	});

	test('`checks: true` against a server without the extension: its answer has no Idempotency-Status, so unknown, never not-sent', async () => {
		const {client} = setUp({checks: true});
		plain.faults.push({type: 'drop-before'}, {type: 'drop-before'});
		const intent = await client.intent('order', order(plain, 'r'));
		await intent.send();
		const found = await intent.check();
		expect(found.status).toBe('unknown');
		expect(intent.state).toBe('unresolved');
	});

	test('a check that gets no answer: unknown, reason no-answer', async () => {
		const {client} = setUp({checks: true});
		server.faults.push({type: 'drop-before'}, {type: 'drop-before'}, {type: 'drop-before'});
		const intent = await client.intent('order', order(server, 's'));
		await intent.send();
		expect(await intent.check()).toEqual({status: 'unknown', key: intent.key, reason: 'no-answer'});
		expect(intent.state).toBe('unresolved');
	});
});

describe('bad input', () => {
	test('`checks` must be a boolean', () => {
		expect(() => createClient({checks: 'yes' as unknown as boolean})).toThrow(/Expected `checks` to be a boolean/);
	});

	test('a discarded intent cannot be checked', async () => {
		const {client} = setUp({checks: true});
		const intent = await client.intent('order', order(server, 't'));
		await intent.discard();
		await expect(intent.check()).rejects.toThrow(TypeError);
	});

	test('a pending intent is not asked about: running, nothing sent', async () => {
		const {client} = setUp({checks: true});
		const intent = await client.intent('order', order(server, 'u'));
		expect(await intent.check()).toMatchObject({status: 'running'});
		expect(server.requests).toHaveLength(0);
	});
});

/** Each integration's call of one order, marked as an intent: it rejects with `OutcomeUnknownError` when unsure. */
const INTEGRATIONS: Record<string, (client: SendOnceClient, id: string) => Promise<unknown>> = {
	createFetch: async (client, id) => createFetch(client)(`${server.url}/orders`, {method: 'POST', headers: {'content-type': 'application/json'}, body: JSON.stringify({order: id}), intent: `order:${id}`}),
	ky: async (client, id) => ky.extend({prefixUrl: server.url, ...sendonceKy(client)}).post('orders', {json: {order: id}, intent: `order:${id}`}).json(),
	axios: async (client, id) => axios.create({baseURL: server.url, adapter: sendonceAdapter(client)}).post('/orders', {order: id}, {intent: `order:${id}`}),
	'TanStack Query': async (client, id) => intentMutation(client, {scope: (order: string) => `order:${order}`, request: order => ({url: `${server.url}/orders`, json: {order}})}).mutationFn!(id, {} as never),
};

describe.each(Object.keys(INTEGRATIONS))('through %s, `error.intent.check()`', name => {
	const call = INTEGRATIONS[name]!;
	test.each([
		['the request lost before the server', {type: 'drop-before'}, 'not-sent', 0],
		['the reply lost after the work', {type: 'lose-reply'}, 'succeeded', 1],
	] as const)('%s: the check settles it %s, and the server counted %i', async (_, lost, settled, effects) => {
		const {client} = setUp({checks: true});
		const id = `${name}-${settled}`;
		server.faults.push(lost, {type: 'drop-before'});
		const error = await call(client, id).then(() => undefined, (error: unknown) => error);
		expect(error).toBeInstanceOf(OutcomeUnknownError);
		const found = await (error as OutcomeUnknownError).intent.check();
		expect(found.status).toBe(settled);
		if (found.status === 'succeeded') expect(found.data).toMatchObject({order: id});
		expect(server.effects.get(id) ?? 0).toBe(effects);
		expect(checksSeen(server)).toHaveLength(1);
	});
});
