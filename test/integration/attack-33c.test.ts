import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http';
import {afterAll, afterEach, beforeAll, describe, expect, test} from 'vitest';
import axios from 'axios';
import ky from 'ky';
import {createClient, memoryStore, RequestRefusedError, type ClientOptions, type IntentStore, type SendOnceEvent, type SendOnceClient} from '../../src/index.js';
import {sendonceAdapter} from '../../src/integrations/axios.js';
import {createFetch} from '../../src/integrations/fetch.js';
import {sendonceKy} from '../../src/integrations/ky.js';
import {intentMutation} from '../../src/integrations/tanstack-query.js';
import {IntentObserver} from '../../src/bindings/intent-observer.js';
import {startContractServer, type ContractServer} from '../server/contract-server.js';
import {closeNow, listenOnLoopback} from '../server/loopback.js';

/*
 * An outside attack on issue 33's client half (`intent.check()`). Tests named "found" assert what
 * the rule asks where the attack found it broken (fixed since: a check never follows a redirect,
 * `closed` only as the contract pairs it, a send joins this page's own check, the bindings keep
 * the newer answer); those named "held" record what held.
 */

let server: ContractServer;
let plain: ContractServer;
const extra: Server[] = [];
beforeAll(async () => {
	server = await startContractServer({checks: true});
	plain = await startContractServer();
});
afterAll(async () => {
	await server.close();
	await plain.close();
	for (const one of extra) await closeNow(one);
});
afterEach(() => {
	server.reset();
	plain.reset();
});

const fast = {retry: {limit: 1, baseDelay: 1, maxDelay: 5, budget: false}, timeout: 2000} satisfies ClientOptions;

function setUp(options: ClientOptions = {}) {
	const store: IntentStore = options.store as IntentStore ?? memoryStore();
	const events: SendOnceEvent[] = [];
	const client = createClient({...fast, onEvent: event => events.push(event), ...options, store});
	return {store, client, events};
}

const checksSeen = (at: ContractServer) => at.requests.filter(request => request.headers['idempotency-check'] !== undefined);

/** A raw HTTP server whose handler is the test's: `handle` gets the request, its body, and its index. */
async function rawServer(handle: (request: IncomingMessage, response: ServerResponse, body: string, index: number) => void): Promise<{url: string; seen: Array<{method: string; headers: IncomingMessage['headers']; body: string}>}> {
	const seen: Array<{method: string; headers: IncomingMessage['headers']; body: string}> = [];
	const raw = createServer(async (request, response) => {
		const chunks: Buffer[] = [];
		for await (const chunk of request) chunks.push(chunk as Buffer);
		const body = Buffer.concat(chunks).toString('utf8');
		seen.push({method: request.method ?? '', headers: request.headers, body});
		handle(request, response, body, seen.length - 1);
	});
	raw.keepAliveTimeout = 500;
	extra.push(raw);
	return {url: await listenOnLoopback(raw), seen};
}

describe('redirects', () => {
	test('found, fixed: a check redirected to another sendonce server that never saw the key is read as "closed": not-sent, though the first server ran it', async () => {
		// The API moved (a 307 to its new home, another sendonce server with its own key store)
		// after the first attempt ran on the old one and its reply was lost.
		let effects = 0;
		const old = await rawServer((request, response, body) => {
			if (body !== '') {
				effects++;
				request.socket.destroy();
				return;
			}

			response.writeHead(307, {location: `${server.url}/orders`});
			response.end();
		});
		const {client} = setUp({checks: true});
		const intent = await client.intent('order', {url: `${old.url}/orders`, json: {order: 'r1'}});
		expect((await intent.send()).status).toBe('unresolved');
		expect(effects).toBe(1);

		const found = await intent.check();
		// The answer came from a server other than the intent's: it proves nothing of the intent.
		expect(found.status).not.toBe('not-sent');
		expect(intent.state).not.toBe('not-sent');
	});

	test('found, fixed: a check is followed through a redirect to a server that never advertised checks, which runs it without its body', async () => {
		// The old route answered the intent's first attempt as sendonce/server does (a 503 that
		// released the key, with Idempotency-TTL), then moved to a server without the extension.
		const old = await rawServer((_request, response, _body, index) => {
			if (index === 0) {
				response.writeHead(503, {'content-type': 'application/json', 'idempotency-ttl': '86400'});
				response.end('{"error":"down"}');
				return;
			}

			response.writeHead(307, {location: `${plain.url}/orders`});
			response.end();
		});
		const {client} = setUp();
		const intent = await client.intent('order', {url: `${old.url}/orders`, json: {order: 'r2'}});
		expect((await intent.send()).status).toBe('unresolved');
		expect(intent.record.checks).toBe(86_400);

		await intent.check();
		// The plain server got a request with the key and without a body: it ran it.
		expect(plain.requests.filter(request => request.body === '')).toHaveLength(0);
		expect(plain.totalEffects).toBe(0);
	});

	test('found, fixed: an Idempotency-TTL on an answer that came through a redirect (another origin) teaches the client that the intent\'s own URL answers checks', async () => {
		// The route first redirects (a maintenance page on another origin that runs sendonce/server),
		// then serves itself again, without the extension.
		let effects = 0;
		const route = await rawServer((request, response, body, index) => {
			if (index === 0) {
				response.writeHead(307, {location: `${server.url}/orders`});
				response.end();
				return;
			}

			if (index === 1) {
				// The next intent's first attempt is lost on the way.
				request.socket.destroy();
				return;
			}

			// A server without the extension runs whatever comes with a key.
			effects++;
			response.writeHead(201, {'content-type': 'application/json'});
			response.end(JSON.stringify({ran: body}));
		});
		const {client} = setUp();
		expect((await client.send('first', {url: `${route.url}/orders`, json: {order: 'r3a'}})).status).toBe('unresolved');

		const intent = await client.intent('order', {url: `${route.url}/orders`, json: {order: 'r3'}});
		expect((await intent.send()).status).toBe('unresolved');
		const found = await intent.check();
		// The route itself never said it answers checks: nothing may be asked of it.
		expect(found).toMatchObject({status: 'unknown', reason: 'not-offered'});
		expect(effects).toBe(0);
	});
});

/** A fetch that answers from a script: each step is a Response to give, or 'lost' (the work ran, the reply was lost). */
function scripted(steps: Array<(init: RequestInit) => Response | 'lost' | 'dropped'>) {
	const calls: Array<{headers: Record<string, string>; body: unknown}> = [];
	let effects = 0;
	const fetch = async (_input: RequestInfo | URL, init?: RequestInit) => {
		const headers = Object.fromEntries(new Headers(init?.headers));
		calls.push({headers, body: init?.body});
		const step = steps.shift();
		const made = step ? step(init ?? {}) : new Response('{}', {status: 500});
		if (made === 'lost') {
			effects++;
			throw new TypeError('fetch failed');
		}

		if (made === 'dropped') throw new TypeError('fetch failed');
		return made;
	};

	return {fetch, calls, effects: () => effects};
}

const json = (status: number, headers: Record<string, string> = {}, body: unknown = {}) => new Response(JSON.stringify(body), {status, headers: {'content-type': 'application/json', ...headers}});

describe('servers that answer checks wrongly', () => {
	test('found, fixed: `Idempotency-Status: closed` on a 502 (a gateway\'s page passing an upstream header) settles not-sent', async () => {
		const script = scripted([() => 'lost', () => json(502, {'idempotency-status': 'closed'}, {error: 'bad gateway'})]);
		const {client} = setUp({checks: true, fetch: script.fetch});
		const intent = await client.intent('order', {url: 'https://api.example/orders', json: {order: 1}});
		expect((await intent.send()).status).toBe('unresolved');
		const found = await intent.check();
		// The contract: closed is a 200 (a check's answer) or a 410 (a request's); a 5xx proves nothing.
		expect(found.status).not.toBe('not-sent');
		expect(script.effects()).toBe(1);
	});

	test('found, fixed: a 2xx answer to a request, with `Idempotency-Status: closed`, settles the send not-sent though a 2xx says it ran', async () => {
		const script = scripted([() => 'lost', () => json(201, {'idempotency-status': 'closed'}, {id: 7})]);
		const {client} = setUp({fetch: script.fetch, retry: {limit: 2, baseDelay: 1, maxDelay: 5, budget: false}});
		const result = await client.send('order', {url: 'https://api.example/orders', json: {order: 1}});
		expect(result.status).toBe('succeeded');
	});

	test('held: a check answered 2xx with no Idempotency-Status is unknown (forgotten), never not-sent', async () => {
		const script = scripted([() => 'lost', () => json(200, {}, {ok: true})]);
		const {client} = setUp({checks: true, fetch: script.fetch});
		const intent = await client.intent('order', {url: 'https://api.example/orders', json: {order: 1}});
		await intent.send();
		expect(await intent.check()).toMatchObject({status: 'unknown', reason: 'forgotten'});
		expect(intent.state).toBe('unresolved');
	});

	test('held: `closed` with odd case and whitespace is read (from a server that answers checks), a status list is not', async () => {
		const a = scripted([() => 'dropped', () => json(200, {'Idempotency-Status': '  CLOSED \t'})]);
		const one = setUp({checks: true, fetch: a.fetch});
		const intent = await one.client.intent('order', {url: 'https://api.example/orders', json: {order: 1}});
		await intent.send();
		expect((await intent.check()).status).toBe('not-sent');

		const b = scripted([() => 'dropped', () => new Response('{}', {status: 200, headers: [['idempotency-status', 'closed'], ['idempotency-status', 'done']]})]);
		const two = setUp({checks: true, fetch: b.fetch});
		const other = await two.client.intent('order', {url: 'https://api.example/orders', json: {order: 2}});
		await other.send();
		expect((await other.check()).status).toBe('unknown');
	});

	test('held: Idempotency-TTL that is negative, zero, NaN, fractional, a list or unsafe is not learned; a huge one is', async () => {
		for (const [ttl, learned] of [['-5', undefined], ['0', undefined], ['abc', undefined], ['1.5', undefined], ['86400, 86400', undefined], ['9007199254740993', undefined], [' 60 ', 60], ['1e3', 1000], ['9007199254740991', 9_007_199_254_740_991]] as const) {
			const script = scripted([() => json(503, {'idempotency-ttl': ttl})]);
			const {client, store} = setUp({fetch: script.fetch});
			const intent = await client.intent('order', {url: 'https://api.example/orders', json: {order: ttl}});
			await intent.send();
			expect([ttl, intent.record.checks]).toEqual([ttl, learned]);
			// What is stored still reads back as a record.
			const reloaded = await createClient({...fast, store}).get('order');
			expect(reloaded?.key).toBe(intent.key);
		}
	});
});

/** One store two "tabs" share, as IndexedDB is: leases coordinate them (no Web Locks in Node). */
function sharedStore(): () => IntentStore {
	const values = new Map<string, unknown>();
	const copy = (value: unknown) => (value === undefined ? undefined : structuredClone(value));
	return () => ({
		shared: true,
		async get(id) {
			return copy(values.get(id));
		},
		async set(id, value) {
			values.set(id, copy(value));
		},
		async delete(id) {
			values.delete(id);
		},
		async list() {
			return [...values].map(([id, value]) => [id, copy(value)] as [string, unknown]);
		},
		async update(id, updater) {
			const next = updater(copy(values.get(id)));
			if (next !== undefined) values.set(id, copy(next));
			else values.delete(id);
		},
	});
}

/** Real fetch, with the check's answer delayed by `ms` (it has reached the server by then). */
function slowChecks(ms: number) {
	return async (input: RequestInfo | URL, init?: RequestInit) => {
		const isCheck = new Headers(init?.headers).has('idempotency-check');
		const response = await fetch(input, init);
		if (isCheck) await new Promise(resolve => setTimeout(resolve, ms));
		return response;
	};
}

const order = (id: string) => ({url: `${server.url}/orders`, json: {order: id}});

describe('races', () => {
	test('found, fixed: send() called while this page\'s own check() runs waits ~1.5 s, then resolves "unresolved, aborted (settled in another tab)" although the check settled it not-sent (or succeeded); later send()s repeat it', async () => {
		for (const found of ['succeeded', 'not-sent'] as const) {
			server.reset();
			const {client} = setUp({checks: true});
			server.faults.push(found === 'not-sent' ? {type: 'drop-before'} : {type: 'lose-reply'});
			const intent = await client.intent('order', order(`c-${found}`));
			expect((await intent.send()).status).toBe('unresolved');
			const [checked, sent] = await Promise.all([intent.check(), intent.send()]);
			expect(checked.status).toBe(found);
			expect(intent.state).toBe(found);
			// One outcome: the send joined the check, or took its outcome.
			expect(sent.status).toBe(found);
			expect((await intent.send()).status).toBe(found);
			expect(intent.result?.status).toBe(found);
		}
	});

	test('held: discard() and client.clear() while a check is in flight: the check ends, nothing is stored or run', async () => {
		for (const how of ['discard', 'clear'] as const) {
			server.reset();
			const {client, store} = setUp({checks: true, fetch: slowChecks(200)});
			server.faults.push({type: 'drop-before'});
			const intent = await client.intent('order', order(`d-${how}`));
			await intent.send();
			const checking = intent.check();
			await new Promise(resolve => setTimeout(resolve, 50));
			if (how === 'discard') await intent.discard();
			else await client.clear();
			const found = await checking;
			expect(found.status).toBe('not-sent');
			expect(await store.list()).toEqual([]);
			expect(server.totalEffects).toBe(0);
			// A new press sends it, once.
			expect((await client.send('order', order(`d-${how}`))).status).toBe('succeeded');
			expect(server.effects.get(`d-${how}`)).toBe(1);
		}
	});

	test('held: a second client on a shared store sends while the first checks: it waits and takes the check\'s outcome; nothing runs', async () => {
		const shared = sharedStore();
		const a = setUp({checks: true, store: shared(), fetch: slowChecks(300)});
		const b = setUp({checks: true, store: shared()});
		server.faults.push({type: 'drop-before'});
		const intent = await a.client.intent('order', order('s1'));
		await intent.send();
		const other = (await b.client.get('order'))!;
		const checking = intent.check();
		await new Promise(resolve => setTimeout(resolve, 50));
		const sending = other.send();
		const [found, sent] = await Promise.all([checking, sending]);
		expect(found.status).toBe('not-sent');
		expect(sent.status).toBe('not-sent');
		expect(server.totalEffects).toBe(0);
		expect(await a.store.list()).toEqual([]);
	});

	test('found (round d), fixed: a client that heard an earlier "unresolved" waits for the send running now and takes its outcome, instead of returning the old one at once', async () => {
		const shared = sharedStore();
		const a = setUp({store: shared()});
		const b = setUp({store: shared()});
		server.faults.push({type: 'drop-before'});
		const intent = await a.client.intent('order', order('w1'));
		// B listens, then hears A's first send end unresolved.
		const other = (await b.client.get('order'))!;
		expect((await intent.send()).status).toBe('unresolved');
		// A's Retry: the server holds the work while B's user presses Retry too.
		let finish!: () => void;
		server.faults.push({type: 'hold', until: new Promise<void>(resolve => {
			finish = resolve;
		})});
		const retried = intent.send();
		await expect.poll(() => server.inFlight).toBe(1);
		let settled = false;
		const joined = other.send().then(result => {
			settled = true;
			return result;
		});
		// Turns of the event loop, no time: the old outcome would have been taken by now.
		for (let turn = 0; turn < 50; turn++) await new Promise<void>(resolve => setImmediate(resolve));
		expect(settled).toBe(false);
		finish();
		expect((await retried).status).toBe('succeeded');
		expect((await joined).status).toBe('succeeded');
		expect(server.totalEffects).toBe(1);
	});

	test('held: a second client on a shared store checks while the first sends (held on the server): running or the send\'s outcome, never not-sent', async () => {
		let finish!: () => void;
		const held = new Promise<void>(resolve => {
			finish = resolve;
		});
		const shared = sharedStore();
		const a = setUp({checks: true, store: shared(), timeout: 5000});
		const b = setUp({checks: true, store: shared()});
		server.faults.push({type: 'drop-before'}, {type: 'hold', until: held});
		const intent = await a.client.intent('order', order('s2'));
		await intent.send();
		const sending = intent.send();
		await expect.poll(() => server.inFlight).toBe(1);
		const other = (await b.client.get('order'))!;
		const checking = other.check();
		setTimeout(finish, 300);
		const [sent, found] = await Promise.all([sending, checking]);
		expect(sent.status).toBe('succeeded');
		expect(['succeeded', 'running']).toContain(found.status);
		expect(server.effects.get('s2')).toBe(1);
	});

	test('held: two clients on one unshared store (no leases): a check and a send race at the server, which decides: one outcome', async () => {
		const store = memoryStore();
		const a = setUp({checks: true, store, fetch: slowChecks(300)});
		const b = setUp({checks: true, store});
		server.faults.push({type: 'drop-before'});
		const intent = await a.client.intent('order', order('u1'));
		await intent.send();
		const other = (await b.client.get('order'))!;
		const checking = intent.check();
		await new Promise(resolve => setTimeout(resolve, 50));
		const sent = await other.send();
		const found = await checking;
		expect(sent.status).toBe('not-sent');
		expect(found.status).toBe('not-sent');
		expect(server.totalEffects).toBe(0);
	});

	test('held: the original, held in a proxy, delivered after the check: 410, nothing runs; delivered before: the check finds it done', async () => {
		for (const delay of [600, 20]) {
			server.reset();
			const late: Array<Promise<Response>> = [];
			let first = true;
			const proxy = async (input: RequestInfo | URL, init?: RequestInit) => {
				if (first) {
					first = false;
					// Held by a proxy: the client gives up on it, the proxy delivers it later anyway.
					const delivered = new Promise(resolve => setTimeout(resolve, delay)).then(async () => fetch(input, {...init, signal: undefined}));
					late.push(delivered);
					return new Promise<Response>((_resolve, reject) => {
						init?.signal?.addEventListener('abort', () => reject(init.signal!.reason));
					});
				}

				return fetch(input, init);
			};

			const {client} = setUp({checks: true, fetch: proxy, timeout: 100});
			const intent = await client.intent('order', order(`p${delay}`));
			expect((await intent.send()).status).toBe('unresolved');
			if (delay < 100) await late[0];
			const found = await intent.check();
			const original = await late[0]!;
			if (delay > 100) {
				expect(found.status).toBe('not-sent');
				expect(original.status).toBe(410);
				expect(server.totalEffects).toBe(0);
			} else {
				expect(found.status).toBe('succeeded');
				expect(server.totalEffects).toBe(1);
			}
		}
	});

	test('held: a check whose answer is lost (the server closed the key): unknown, and the next send() settles not-sent without running', async () => {
		const lose = async (input: RequestInfo | URL, init?: RequestInit) => {
			const response = await fetch(input, init);
			if (new Headers(init?.headers).has('idempotency-check')) throw new TypeError('fetch failed');
			return response;
		};

		const {client, store} = setUp({checks: true, fetch: lose});
		server.faults.push({type: 'drop-before'});
		const intent = await client.intent('order', order('l1'));
		await intent.send();
		expect(await intent.check()).toMatchObject({status: 'unknown', reason: 'no-answer'});
		expect(intent.state).toBe('unresolved');
		expect(await intent.send()).toMatchObject({status: 'not-sent'});
		expect(server.totalEffects).toBe(0);
		expect(await store.list()).toEqual([]);
	});
});

/** Another client (a device, a tab with its own store) checks the key: the server closes it. */
async function closeElsewhere(client: SendOnceClient, scope: string): Promise<void> {
	const intent = (await client.get(scope))!;
	const answer = await fetch(`${server.url}/orders`, {method: 'POST', headers: {'idempotency-key': intent.key, 'idempotency-check': `created=${intent.createdAt}`}});
	expect(answer.headers.get('idempotency-status')).toBe('closed');
}

describe('integrations, when another client closed the key', () => {
	test('held: createFetch rejects with RequestRefusedError', async () => {
		const client = createClient({...fast, store: memoryStore()});
		const send = createFetch(client);
		const init = {method: 'POST', headers: {'content-type': 'application/json'}, body: JSON.stringify({order: 'i1'}), intent: 'checkout'};
		server.faults.push({type: 'drop-before'});
		await expect(send(`${server.url}/orders`, init)).rejects.toThrow();
		await closeElsewhere(client, 'checkout');
		await expect(send(`${server.url}/orders`, init)).rejects.toBeInstanceOf(RequestRefusedError);
		expect(server.totalEffects).toBe(0);
	});

	test('held: ky rejects with RequestRefusedError', async () => {
		const client = createClient({...fast, store: memoryStore()});
		const api = ky.extend({prefixUrl: server.url, retry: {limit: 2, backoffLimit: 1}, ...sendonceKy(client)});
		server.faults.push({type: 'drop-before'});
		await expect(api.post('orders', {json: {order: 'i2'}, intent: 'checkout'} as never).json()).rejects.toThrow();
		await closeElsewhere(client, 'checkout');
		await expect(api.post('orders', {json: {order: 'i2'}, intent: 'checkout'} as never).json()).rejects.toBeInstanceOf(RequestRefusedError);
		expect(server.totalEffects).toBe(0);
	});

	test('held: axios rejects with RequestRefusedError', async () => {
		const client = createClient({...fast, store: memoryStore()});
		const api = axios.create({baseURL: server.url, adapter: sendonceAdapter(client)});
		server.faults.push({type: 'drop-before'});
		await expect(api.post('/orders', {order: 'i3'}, {intent: 'checkout'} as never)).rejects.toThrow();
		await closeElsewhere(client, 'checkout');
		await expect(api.post('/orders', {order: 'i3'}, {intent: 'checkout'} as never)).rejects.toBeInstanceOf(RequestRefusedError);
		expect(server.totalEffects).toBe(0);
	});

	test('held: TanStack mutationFn rejects with RequestRefusedError', async () => {
		const client = createClient({...fast, store: memoryStore()});
		const {mutationFn} = intentMutation(client, {scope: (id: string) => `checkout:${id}`, request: id => ({url: `${server.url}/orders`, json: {order: id}})});
		server.faults.push({type: 'drop-before'});
		await expect(mutationFn('i4', {} as never)).rejects.toThrow();
		await closeElsewhere(client, 'checkout:i4');
		await expect(mutationFn('i4', {} as never)).rejects.toBeInstanceOf(RequestRefusedError);
		expect(server.totalEffects).toBe(0);
	});
});

describe('hooks, options, records', () => {
	test('held: a `headers` function that throws during a check rejects check() (nothing sent), and leaves no lease behind: another client sends at once', async () => {
		const shared = sharedStore();
		let fail = false;
		const a = setUp({checks: true, store: shared(), headers: () => {
			if (fail) throw new Error('token refresh failed');
			return {};
		}});
		const b = setUp({checks: true, store: shared()});
		server.faults.push({type: 'drop-before'});
		const intent = await a.client.intent('order', order('h1'));
		await intent.send();
		fail = true;
		await expect(intent.check()).rejects.toThrow('token refresh failed');
		expect(checksSeen(server)).toHaveLength(0);
		expect(intent.state).toBe('unresolved');
		const started = Date.now();
		expect((await (await b.client.get('order'))!.send()).status).toBe('succeeded');
		expect(Date.now() - started).toBeLessThan(1000);
		expect(server.effects.get('h1')).toBe(1);
	});

	test('held: an onEvent that throws on `checked` changes nothing: the check settles, and other clients hear it', async () => {
		const shared = sharedStore();
		const a = setUp({checks: true, store: shared(), onEvent: () => {
			throw new Error('listener bug');
		}});
		const b = setUp({checks: true, store: shared()});
		server.faults.push({type: 'drop-before'});
		const intent = await a.client.intent('order', order('e1'));
		await intent.send();
		const other = (await b.client.get('order'))!;
		expect((await intent.check()).status).toBe('not-sent');
		expect((await other.send()).status).toBe('not-sent');
		expect(server.totalEffects).toBe(0);
	});

	test('held: `checks: false` never asks, even with `checks` stored in the record; an expired intent inside the ttl is asked', async () => {
		const {client, store} = setUp();
		expect((await client.send('first', order('f0'))).status).toBe('succeeded');
		server.faults.push({type: 'drop-before'});
		const intent = await client.intent('order', order('f1'));
		await intent.send();
		expect(intent.record.checks).toBe(86_400);
		const never = createClient({...fast, store, checks: false});
		expect(await (await never.get('order'))!.check()).toMatchObject({status: 'unknown', reason: 'not-offered'});
		expect(checksSeen(server)).toHaveLength(0);

		// Past its window, inside the server's ttl: asked, and closed.
		const old = setUp({checks: true, window: 300});
		server.faults.push({type: 'drop-before'});
		const aged = await old.client.intent('order', order('f2'));
		expect((await aged.send()).status).toBe('unresolved');
		await new Promise(resolve => setTimeout(resolve, 350));
		expect((await aged.send()).status).toBe('expired');
		expect((await aged.check()).status).toBe('not-sent');
		expect(server.effects.get('f2')).toBeUndefined();
	});

	test('held: a stored `not-sent` mark (its delete failed) is removed when read, never sent, and never shown as an intent', async () => {
		const values = new Map<string, unknown>();
		const store: IntentStore = {
			async get(id) {
				return structuredClone(values.get(id));
			},
			async set(id, value) {
				values.set(id, structuredClone(value));
			},
			async delete(id) {
				values.delete(id);
			},
			async list() {
				return [...values].map(([id, value]) => [id, structuredClone(value)] as [string, unknown]);
			},
		};
		const {client} = setUp({checks: true, store});
		server.faults.push({type: 'drop-before'});
		const intent = await client.intent('order', order('m1'));
		await intent.send();
		const [id, record] = [...values][0] as [string, Record<string, unknown>];
		values.set(id, {...record, state: 'not-sent'});
		const reloaded = createClient({...fast, store, checks: true});
		expect(await reloaded.get('order')).toBeUndefined();
		expect(await reloaded.resume()).toEqual([]);
		expect(values.size).toBe(0);
		expect(server.requests).toHaveLength(1);
	});

	test('found (UI), fixed: the bindings\' `checked` shows a check\'s late answer after the user pressed Retry and the intent settled', async () => {
		const {client} = setUp({checks: true, fetch: slowChecks(300)});
		let finish!: () => void;
		const held = new Promise<void>(resolve => {
			finish = resolve;
		});
		server.faults.push({type: 'drop-before'}, {type: 'hold', until: held});
		const observer = new IntentObserver(client, 'order');
		const stop = observer.subscribe(() => undefined);
		await observer.send(order('o1'));
		expect(observer.getView().state).toBe('unresolved');
		// Another client retries it; it is held on the server: this page's check finds it running.
		const other = createClient({...fast, store: memoryStore(), timeout: 5000});
		void fetch(`${server.url}/orders`, {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': observer.getView().key!}, body: JSON.stringify({order: 'o1'})});
		await expect.poll(() => server.inFlight).toBe(1);
		void other;
		const checking = observer.check();
		await new Promise(resolve => setTimeout(resolve, 50));
		const retrying = observer.retry();
		finish();
		await checking;
		await retrying;
		expect(observer.getView().state).toBe('succeeded');
		// "Still working on it: check again" beside a succeeded intent.
		expect(observer.getView().checked).toBeUndefined();
		stop();
	});
});

describe('records across versions', () => {
	test('held (degrades only): the previous version strips `checks` from a record it reads, and sets a stored `not-sent` mark aside as corrupt', async () => {
		const {parseRecord: parseOld} = await import('./attack-33c-old-record.js');
		const {client, store} = setUp();
		expect((await client.send('first', order('v0'))).status).toBe('succeeded');
		server.faults.push({type: 'drop-before'});
		const intent = await client.intent('order', order('v1'));
		await intent.send();
		const stored = await store.get('intent:order') as Record<string, unknown>;
		expect(stored.checks).toBe(86_400);
		const old = parseOld(stored);
		expect('record' in old && (old.record as unknown as Record<string, unknown>).checks).toBeUndefined();
		expect(parseOld({...stored, state: 'not-sent'})).toEqual({problem: 'state: invalid'});
	});
});

describe('what is learned, and where it applies', () => {
	test('held: an advertisement learned for POST /orders is not used for PUT /orders, POST /orders?x, or the same path on another origin', async () => {
		const {client} = setUp();
		expect((await client.send('first', order('w0'))).status).toBe('succeeded');
		for (const [method, url] of [['PUT', `${plain.url}/orders`], ['POST', `${server.url}/orders?x=1`], ['POST', `${plain.url}/orders`], ['PUT', `${server.url}/orders`]] as const) {
			const target = url.startsWith(plain.url) ? plain : server;
			target.faults.push({type: 'drop-before'});
			const intent = await client.intent(`leak:${method}:${url}`, {url, method, json: {order: `w-${method}-${url}`}});
			expect((await intent.send()).status).toBe('unresolved');
			expect(await intent.check()).toMatchObject({status: 'unknown', reason: 'not-offered'});
		}

		expect(checksSeen(server)).toHaveLength(0);
		expect(checksSeen(plain)).toHaveLength(0);
	});

	test('held: resume() (what useIntent runs on mount) racing this page\'s own check() reports nothing unresolved', async () => {
		const {client} = setUp({checks: true});
		server.faults.push({type: 'drop-before'});
		const intent = await client.intent('order', order('z1'));
		await intent.send();
		const [found, resumed] = await Promise.all([intent.check(), client.resume()]);
		expect(found.status).toBe('not-sent');
		expect(resumed.map(result => result.status)).not.toContain('unresolved');
	});
});

describe('a shared store whose record another tab cleared', () => {
	test('found (misleading), fixed: check() of an intent this page sent, after another tab cleared the store, never asks and answers "running" (after ~1.5 s), every time', async () => {
		const shared = sharedStore();
		const a = setUp({checks: true, store: shared()});
		const b = setUp({checks: true, store: shared()});
		server.faults.push({type: 'drop-before'});
		const intent = await a.client.intent('order', order('x1'));
		expect((await intent.send()).status).toBe('unresolved');
		await b.client.clear();
		const found = await intent.check();
		// Nothing runs it: "the server is still working on it" is not what happened; asking would tell.
		expect(found.status).not.toBe('running');
	});
});
