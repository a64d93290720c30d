import createApiClient from 'openapi-fetch';
import {afterAll, afterEach, beforeAll, describe, expect, test} from 'vitest';
import * as z from 'zod';
import {createClient, InvalidRequestError, memoryStore, OutcomeUnknownError, UnresolvedIntentError, type ClientOptions, type IntentInit, type IntentStore} from '../../src/index.js';
import {createFetch} from '../../src/integrations/fetch.js';
import {startContractServer, type ContractServer} from '../server/contract-server.js';
import {ANSWERS, binaryWork, bytesOf, PNG, type AnswerKind} from './binary.js';

/*
 * createFetch, `sendonce/fetch` (issue 13; its own entry since issue 23): a fetch to swap in, with the same guarantees as client.send, against
 * a real local server that honours the contract.
 */

let server: ContractServer;
beforeAll(async () => {
	server = await startContractServer({
		work: binaryWork,
		serve(request, response) {
			if (request.method !== 'GET' && request.method !== 'HEAD') return false;
			response.writeHead(200, {'content-type': 'application/json', 'x-seen-key': String(request.headers['idempotency-key'] ?? '')});
			response.end(request.method === 'HEAD' ? undefined : JSON.stringify({orders: []}));
			return true;
		},
	});
});
afterAll(async () => server.close());
afterEach(() => {
	server.reset();
});

const fast = {store: 'memory', retry: {limit: 3, baseDelay: 1, maxDelay: 5, budget: false}, timeout: 2000} satisfies ClientOptions;
const orders = () => `${server.url}/orders`;
const json = (order: string) => JSON.stringify({order});

describe('client.fetch speaks fetch', () => {
	test.each<[string, () => [RequestInfo | URL, IntentInit?]]>([
		['a string and an init', () => [orders(), {method: 'POST', body: json('in-1'), headers: {'content-type': 'application/json'}}]],
		['a URL and an init', () => [new URL(orders()), {method: 'POST', body: json('in-2'), headers: {'content-type': 'application/json'}}]],
		['a Request', () => [new Request(orders(), {method: 'POST', body: json('in-3'), headers: {'content-type': 'application/json'}})]],
		['a Request, its body and headers overridden by init', () => [new Request(orders(), {method: 'POST', body: json('ignored'), headers: {'content-type': 'text/plain', 'x-a': '1'}}), {body: json('in-4'), headers: {'content-type': 'application/json'}}]],
		['headers as pairs', () => [orders(), {method: 'POST', body: json('in-5'), headers: [['Content-Type', 'application/json'], ['X-A', '1']]}]],
		['headers as a Headers', () => [orders(), {method: 'POST', body: json('in-6'), headers: new Headers({'content-type': 'application/json', 'x-a': '1'})}]],
		['a method in lower case', () => [orders(), {method: 'post', body: json('in-7'), headers: {'content-type': 'application/json'}}]],
	])('%s: a 201 Response, the body sent once with a key', async (_case, make) => {
		const client = createClient(fast);
		const [input, init] = make();
		const response = await createFetch(client)(input, init);

		expect(response).toBeInstanceOf(Response);
		expect(response.status).toBe(201);
		expect(response.ok).toBe(true);
		expect(response.headers.get('content-type')).toBe('application/json');
		expect(response.url).toBe(orders());
		const sent = server.requests[0]!;
		expect(await response.json()).toEqual(JSON.parse(JSON.stringify({id: 'order-1', order: JSON.parse(sent.body).order, effects: 1})));
		expect(response.bodyUsed).toBe(true);
		await expect(response.text()).rejects.toThrow(TypeError);
		expect(server.requests).toHaveLength(1);
		expect(sent.key).toMatch(/^[\da-f-]{36}$/);
		expect(sent.headers['content-type']).toBe('application/json');
		expect(sent.body).toMatch(/^\{"order":"in-\d"\}$/);
	});

	test('a definitive 4xx is a Response too, not ok, with the server\'s body', async () => {
		const response = await createFetch(createClient(fast))(orders(), {method: 'POST', body: JSON.stringify({order: 'no', reject: 'sold out'}), headers: {'content-type': 'application/json'}});
		expect(response.status).toBe(400);
		expect(response.ok).toBe(false);
		expect(await response.json()).toEqual({error: 'invalid order', reason: 'sold out'});
	});

	test.each(['GET', 'HEAD', 'OPTIONS'])('%s passes straight through: no key, nothing stored', async method => {
		const store = (await import('../../src/index.js')).memoryStore();
		const response = await createFetch(createClient({...fast, store}))(`${server.url}/list`, {method});
		expect(response.status).toBe(method === 'OPTIONS' ? 201 : 200);
		if (method !== 'OPTIONS') expect(response.headers.get('x-seen-key')).toBe('');
		expect(await store.list()).toEqual([]);
	});

	test.each<[string, IntentInit['body'] | (() => Request)]>([
		['a FormData body', new FormData()],
		['a Blob body', new Blob(['x'])],
		['a stream body', new ReadableStream()],
		['a Request with a multipart body', () => {
			const form = new FormData();
			form.set('a', '1');
			return new Request(orders(), {method: 'POST', body: form});
		}],
	])('%s is refused with InvalidRequestError, before anything is sent', async (_case, body) => {
		const client = createClient(fast);
		const sending = typeof body === 'function' ? createFetch(client)(body()) : createFetch(client)(orders(), {method: 'POST', body, ...(body instanceof ReadableStream ? {duplex: 'half'} : {})});
		await expect(sending).rejects.toBeInstanceOf(InvalidRequestError);
		expect(server.requests).toEqual([]);
	});
});

describe('client.fetch keeps the promise', () => {
	test('a lost reply, then a 503: the same key, one effect', async () => {
		const client = createClient(fast);
		server.faults.push({type: 'lose-reply'}, {type: 'error-before', status: 503});
		const response = await createFetch(client)(orders(), {method: 'POST', body: json('lost-1'), headers: {'content-type': 'application/json'}, intent: 'checkout'});

		expect(response.status).toBe(201);
		expect(response.headers.get('idempotent-replayed')).toBe('true');
		expect(server.effects.get('lost-1')).toBe(1);
		expect(new Set(server.keys).size).toBe(1);
		expect(server.keys).toHaveLength(3);
	});

	test('may have been sent: OutcomeUnknownError, carrying the intent to retry with its key', async () => {
		const client = createClient({...fast, retry: {...fast.retry, limit: 2}});
		server.faults.push({type: 'lose-reply'}, {type: 'error-before', status: 503});
		const error = await createFetch(client)(orders(), {method: 'POST', body: json('unsure-1'), intent: 'checkout'}).catch((error: unknown) => error);

		expect(error).toBeInstanceOf(OutcomeUnknownError);
		expect(error).toMatchObject({name: 'OutcomeUnknownError', code: 'OUTCOME_UNKNOWN', result: {status: 'unresolved', reason: 'exhausted'}});
		const {intent} = error as OutcomeUnknownError;
		expect(intent.key).toBe(server.keys[0]);
		expect(await intent.send()).toMatchObject({status: 'succeeded', replayed: true});
		expect(server.effects.get('unsure-1')).toBe(1);
	});

	test('the default scope is the method and the URL: another body to the same URL is refused while the first may have been sent', async () => {
		const client = createClient({...fast, retry: {...fast.retry, limit: 1}});
		server.faults.push({type: 'lose-reply'});
		await expect(createFetch(client)(orders(), {method: 'POST', body: json('scope-1')})).rejects.toBeInstanceOf(OutcomeUnknownError);
		await expect(createFetch(client)(orders(), {method: 'POST', body: json('scope-2')})).rejects.toBeInstanceOf(UnresolvedIntentError);

		const again = await createFetch(client)(orders(), {method: 'POST', body: json('scope-1')});
		expect(again.status).toBe(201);
		expect(server.effects.get('scope-1')).toBe(1);
	});

	test('init.intent with replace sends another body as a new action', async () => {
		const client = createClient({...fast, retry: {...fast.retry, limit: 1}});
		server.faults.push({type: 'lose-reply'});
		await expect(createFetch(client)(orders(), {method: 'POST', body: json('r-1'), intent: 'contact'})).rejects.toBeInstanceOf(OutcomeUnknownError);
		const response = await createFetch(client)(orders(), {method: 'POST', body: json('r-2'), intent: {scope: 'contact', replace: true}});

		expect(response.status).toBe(201);
		expect(new Set(server.keys).size).toBe(2);
	});

	test('a signal aborts it, and it says it may have been sent', async () => {
		const client = createClient(fast);
		server.faults.push({type: 'slow', ms: 300});
		const controller = new AbortController();
		const sending = createFetch(client)(orders(), {method: 'POST', body: json('abort-1'), signal: controller.signal});
		await expect.poll(() => server.inFlight).toBe(1);
		controller.abort();
		await expect(sending).rejects.toMatchObject({name: 'OutcomeUnknownError', result: {reason: 'aborted'}});
	});

	test('a schema types and checks the body of a success (client.send)', async () => {
		const client = createClient(fast);
		const order = z.object({id: z.string(), order: z.string()});
		const result = await client.send('checkout', {url: orders(), json: {order: 'typed-1'}, schema: order});
		expect(result).toMatchObject({status: 'succeeded', data: {id: 'order-1', order: 'typed-1'}});
		if (result.status === 'succeeded') expect(result.data.id satisfies string).toBe('order-1');

		const wrong = await client.send('checkout-2', {url: orders(), json: {order: 'typed-2'}, schema: z.object({id: z.number()})});
		expect(wrong).toMatchObject({status: 'succeeded', data: {id: 'order-2'}, issues: [expect.objectContaining({path: ['id']})]});
	});
});

describe('createFetch, where a library takes a fetch', () => {
	test('openapi-fetch sends its POSTs as intents: a lost reply is sent again with the key, one effect', async () => {
		const api = createApiClient<Record<string, never>>({baseUrl: server.url, fetch: createFetch(fast)});
		server.faults.push({type: 'lose-reply'});
		const {data, response} = await (api as unknown as {POST: (path: string, options: {body: unknown}) => Promise<{data: unknown; response: Response}>}).POST('/orders', {body: {order: 'openapi-1'}});

		expect(response.status).toBe(201);
		expect(data).toMatchObject({order: 'openapi-1', effects: 1});
		expect(server.effects.get('openapi-1')).toBe(1);
		expect(server.keys).toHaveLength(2);
		expect(new Set(server.keys).size).toBe(1);
	});

	test('given a client, it sends through that client: one intent per scope, whichever fetch sends it', async () => {
		const client = createClient(fast);
		const [first, second] = await Promise.all([
			createFetch(client)(orders(), {method: 'POST', body: json('shared-1'), intent: 'shared'}),
			createFetch(client)(orders(), {method: 'POST', body: json('shared-1'), intent: 'shared'}),
		]);
		expect([first.status, second.status]).toEqual([201, 201]);
		expect(server.effects.get('shared-1')).toBe(1);
		expect(new Set(server.keys).size).toBe(1);
	});

	test('the core client no longer carries fetch: the types name sendonce/fetch, and no code of it is loaded', () => {
		const client = createClient(fast);
		// @ts-expect-error `fetch` is typed `never`, its JSDoc pointing at `sendonce/fetch`.
		expect(() => client.fetch(orders())).toThrow(TypeError);
		expect('fetch' in client).toBe(false);
	});

	test('refuses an object that is not a client made by createClient', () => {
		expect(() => createFetch({resume: async () => []} as never)).toThrow(TypeError);
	});
});

describe('answers arrive byte for byte (issue 20)', () => {
	const ask = (kind: AnswerKind, order: string) => JSON.stringify({order, answer: kind});
	const post = {method: 'POST', headers: {'content-type': 'application/json'}} as const;
	/** What the server wrote for the last request it answered. */
	const sent = () => server.requests.at(-1)!.sent!;

	test.each<AnswerKind>(['png', 'octets', 'text'])('%s: arrayBuffer() and blob() give the bytes the server sent', async kind => {
		const client = createClient(fast);
		const response = await createFetch(client)(orders(), {...post, body: ask(kind, `bytes-${kind}`)});
		expect(sent()).toEqual(ANSWERS[kind].body);
		expect(await bytesOf(await response.clone().arrayBuffer())).toEqual(sent());
		const blob = await response.blob();
		expect(blob.type).toBe(ANSWERS[kind].type.replace('; ', ';'));
		expect(await bytesOf(blob)).toEqual(sent());
	});

	test('text() decodes the bytes as fetch does, and only when asked', async () => {
		const response = await createFetch(createClient(fast))(orders(), {...post, body: ask('text', 'bytes-decode')});
		expect(await response.text()).toBe(await new Response(sent()).text());
	});

	test('a binary answer is `data` as an ArrayBuffer of its bytes; a text answer stays text', async () => {
		const client = createClient(fast);
		const png = await client.send('png', {url: orders(), json: {order: 'bytes-data', answer: 'png'}});
		expect(png.status).toBe('succeeded');
		expect((png as {data: unknown}).data).toBeInstanceOf(ArrayBuffer);
		expect(await bytesOf((png as {data: ArrayBuffer}).data)).toEqual(sent());

		const text = await client.send('text', {url: orders(), json: {order: 'bytes-text', answer: 'text'}});
		expect(text).toMatchObject({status: 'succeeded', data: await new Response(sent()).text()});
	});

	test('after a reload, the stored intent sent again gets the replayed bytes, through client.fetch and as `data`', async () => {
		const store = memoryStore();
		server.faults.push({type: 'lose-reply'}, {type: 'lose-reply'});
		const before = createClient({...fast, store, retry: {...fast.retry, limit: 1}});
		await expect(createFetch(before)(orders(), {...post, body: ask('png', 'bytes-reload-1'), intent: 'png-1'})).rejects.toBeInstanceOf(OutcomeUnknownError);
		await expect(createFetch(before)(orders(), {...post, body: ask('png', 'bytes-reload-2'), intent: 'png-2'})).rejects.toBeInstanceOf(OutcomeUnknownError);

		const after = createClient({...fast, store});
		const response = await createFetch(after)(orders(), {...post, body: ask('png', 'bytes-reload-1'), intent: 'png-1'});
		expect(response.headers.get('idempotent-replayed')).toBe('true');
		expect(await bytesOf(await response.arrayBuffer())).toEqual(sent());
		expect(sent()).toEqual(PNG);

		const [listed] = await after.list();
		expect(listed?.scope).toBe('png-2');
		const result = await listed!.send();
		expect(result).toMatchObject({status: 'succeeded', replayed: true});
		expect(await bytesOf((result as {data: ArrayBuffer}).data)).toEqual(sent());
		expect(server.effects.get('bytes-reload-1')).toBe(1);
		expect(server.effects.get('bytes-reload-2')).toBe(1);
	});

	test('another tab that joined the send gets the same bytes, from the outcome the sending tab announced', async () => {
		const shared: IntentStore = {...memoryStore(), shared: true, durable: true};
		let release!: () => void;
		server.faults.push({type: 'hold', until: new Promise<void>(resolve => {
			release = resolve;
		})});
		// Without Web Locks (Node), the second tab waits on the first's lease, and looks at the
		// store again (a read) while it waits: then the first tab's work may end.
		const second = createClient({...fast, store: {...shared, get: async id => {
			release();
			return shared.get(id);
		}}});
		const first = createClient({...fast, store: shared});
		const init = {...post, body: ask('png', 'bytes-tabs'), intent: 'png-tabs'};
		const sending = createFetch(first)(orders(), init);
		await expect.poll(() => server.inFlight).toBe(1);
		const [mine, theirs] = await Promise.all([sending, createFetch(second)(orders(), init)]);

		expect(server.requests).toHaveLength(1);
		expect(await bytesOf(await mine.arrayBuffer())).toEqual(sent());
		expect(theirs.headers.get('content-type')).toBe('image/png');
		expect(await bytesOf(await theirs.arrayBuffer())).toEqual(sent());
	});
});
