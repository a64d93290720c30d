import {afterEach, describe, expect, test, vi} from 'vitest';
import {idempotency, memoryKeyStore, parseKeyHeader, requestFingerprint, type IdempotencyOptions} from '../../src/server.js';

afterEach(() => {
	vi.useRealTimers();
});

const encode = (text: string) => new TextEncoder().encode(text);

function request(key: string | undefined, body: unknown = {order: 1}, init: {method?: string; path?: string; headers?: Record<string, string>} = {}): Request {
	const method = init.method ?? 'POST';
	return new Request(`http://api.test${init.path ?? '/orders'}`, {
		method,
		headers: {'content-type': 'application/json', ...(key === undefined ? {} : {'idempotency-key': key}), ...init.headers},
		...(method === 'GET' || method === 'HEAD' ? {} : {body: JSON.stringify(body)}),
	});
}

/** A wrapped handler that counts its runs and answers 201 with the run's number. */
function counted(options: IdempotencyOptions = {}, answer?: (run: number, request: Request) => Response | Promise<Response>) {
	const seen: Array<string | undefined> = [];
	const handle = idempotency({store: memoryKeyStore(), ...options})(async (request, {key}) => {
		seen.push(key);
		return answer ? answer(seen.length, request) : Response.json({run: seen.length}, {status: 201});
	});
	return {handle, seen};
}

describe('the key header', () => {
	test('a raw key and the same key as an RFC 8941 string name one key', async () => {
		const {handle, seen} = counted();
		await handle(request('abc-1'));
		const quoted = await handle(request('"abc-1"'));

		expect(seen).toEqual(['abc-1']);
		expect(quoted.headers.get('idempotent-replayed')).toBe('true');
		expect(parseKeyHeader(String.raw`"a\"b\\c"`)).toEqual({type: 'key', key: String.raw`a"b\c`});
	});

	test.each([
		['an empty key', ''],
		['a key with a space', 'a b'],
		['two keys', 'a, b'],
		['a key of 256 characters', 'k'.repeat(256)],
		['a non-ASCII key', 'clé'],
		['an unterminated quote', '"abc'],
		['an empty quoted key', '""'],
	])('%s gets 400 problem+json and the handler does not run', async (_, key) => {
		const {handle, seen} = counted();
		const response = await handle(request(key));

		expect(response.status).toBe(400);
		expect(response.headers.get('content-type')).toBe('application/problem+json');
		expect(await response.json()).toMatchObject({status: 400, title: 'Malformed idempotency key'});
		expect(seen).toEqual([]);
	});

	test('a key of 255 characters is a key', () => {
		expect(parseKeyHeader('k'.repeat(255))).toEqual({type: 'key', key: 'k'.repeat(255)});
	});

	test('required: a POST without a key gets 400; without required it runs with no key', async () => {
		const strict = counted({required: true});
		const response = await strict.handle(request(undefined));
		expect(response.status).toBe(400);
		expect(await response.json()).toMatchObject({title: 'Idempotency key missing'});
		expect(strict.seen).toEqual([]);

		const lenient = counted();
		expect((await lenient.handle(request(undefined))).status).toBe(201);
		expect((await lenient.handle(request(undefined))).status).toBe(201);
		expect(lenient.seen).toEqual([undefined, undefined]);
	});

	test('a GET passes straight through, key or not, even when keys are required', async () => {
		const {handle, seen} = counted({required: true});
		await handle(request(undefined, undefined, {method: 'GET'}));
		await handle(request('k', undefined, {method: 'GET'}));
		expect(seen).toEqual([undefined, undefined]);
	});

	test('headerName reads another header', async () => {
		const {handle, seen} = counted({headerName: 'X-Request-Key'});
		await handle(request(undefined, {}, {headers: {'x-request-key': 'mine'}}));
		expect(seen).toEqual(['mine']);
	});
});

describe('the fingerprint', () => {
	const fingerprint = async (method: string, path: string, type: string | null, body: string) => requestFingerprint(method, path, type, encode(body));

	test('JSON in another key order or spacing is the same request', async () => {
		expect(await fingerprint('POST', '/orders', 'application/json', '{"a":1,"b":[1,{"y":2,"x":1}]}'))
			.toBe(await fingerprint('POST', '/orders', 'application/json; charset=utf-8', '{ "b": [1, {"x": 1, "y": 2}], "a": 1 }'));
		expect(await fingerprint('POST', '/orders', 'application/vnd.api+json', '{"b":1,"a":2}')).toBe(await fingerprint('POST', '/orders', 'application/json', '{"a":2,"b":1}'));
	});

	test('the method, the path, the query and the body each make another request', async () => {
		const base = await fingerprint('POST', '/orders', 'application/json', '{"a":1}');
		expect(await fingerprint('PUT', '/orders', 'application/json', '{"a":1}')).not.toBe(base);
		expect(await fingerprint('POST', '/orders/2', 'application/json', '{"a":1}')).not.toBe(base);
		expect(await fingerprint('POST', '/orders?x=1', 'application/json', '{"a":1}')).not.toBe(base);
		expect(await fingerprint('POST', '/orders', 'application/json', '{"a":2}')).not.toBe(base);
	});

	test('other bodies are their bytes: key order matters outside JSON', async () => {
		expect(await fingerprint('POST', '/f', 'application/x-www-form-urlencoded', 'a=1&b=2')).not.toBe(await fingerprint('POST', '/f', 'application/x-www-form-urlencoded', 'b=2&a=1'));
		// Invalid JSON under a JSON type is fingerprinted as bytes, not refused.
		expect(await fingerprint('POST', '/f', 'application/json', '{oops')).toMatch(/^[\da-f]{64}$/);
	});

	test("Web Crypto, where Node's crypto is missing, gives the same digest", async () => {
		const {sha256Hex} = await import('../../src/server/web-crypto.js');
		const bytes = encode('{"a":1}');
		expect(await sha256Hex(bytes, undefined)).toBe(await sha256Hex(bytes));
		expect(await sha256Hex(bytes, undefined)).toBe('015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862');
	});

	test('the digest is SHA-256 over "METHOD path\\n" and the canonical body', async () => {
		const {createHash} = await import('node:crypto');
		expect(await fingerprint('post', '/o', 'application/json', '{"b":1,"a":2}')).toBe(createHash('sha256').update('POST /o\n{"a":2,"b":1}').digest('hex'));
	});
});

describe('leases', () => {
	test('a handler that runs longer than its lease keeps the key: duplicates get 409 until it answers', async () => {
		vi.useFakeTimers();
		let finish!: () => void;
		let started!: () => void;
		const running = new Promise<void>(resolve => {
			started = resolve;
		});
		const {handle, seen} = counted({lease: 1000}, async () => {
			started();
			await new Promise<void>(resolve => {
				finish = resolve;
			});
			return new Response('ok', {status: 201});
		});
		const first = handle(request('slow'));
		await running;
		await vi.advanceTimersByTimeAsync(5000);
		expect((await handle(request('slow'))).status).toBe(409);

		finish();
		expect((await first).status).toBe(201);
		expect((await handle(request('slow'))).headers.get('idempotent-replayed')).toBe('true');
		expect(seen).toEqual(['slow']);
	});

	test("a crashed process's claim (never renewed) answers 409 until its lease ends, then the retry runs and reports the lost lease", async () => {
		vi.useFakeTimers();
		const store = memoryKeyStore();
		// What a process that died mid-handler leaves behind: a claim no one renews.
		const fingerprint = await requestFingerprint('POST', '/orders', 'application/json', encode('{"order":1}'));
		const dead = await store.claim('crashed', {fingerprint, lease: 2000, ttl: 60_000});
		const reports: unknown[] = [];
		const {handle, seen} = counted({store, lease: 2000, onError: (error, context) => reports.push([(error as Error).name, context])});

		await vi.advanceTimersByTimeAsync(1999);
		const early = await handle(request('crashed'));
		expect(early.status).toBe(409);
		expect(early.headers.get('retry-after')).toBe('1');
		await vi.advanceTimersByTimeAsync(1);
		expect((await handle(request('crashed'))).status).toBe(201);
		expect(seen).toEqual(['crashed']);
		expect(reports).toEqual([['LeaseLostError', {key: 'crashed', phase: 'lease-lost', fence: (dead as {fence: number}).fence}]]);
	});
});

describe('Retry-After of a 409 in lease mode', () => {
	test('while the holder renews its lease, retryAfter; once it has missed its renewals (a crashed process), the lease left', async () => {
		vi.useFakeTimers();
		const store = memoryKeyStore();
		const fingerprint = await requestFingerprint('POST', '/orders', 'application/json', encode('{"order":1}'));
		// A process that died mid-handler: its claim is never renewed.
		await store.claim('dead', {fingerprint, lease: 30_000, ttl: 60_000});
		let finish!: () => void;
		const {handle} = counted({store, lease: 30_000, onError: () => undefined}, async () => {
			await new Promise<void>(resolve => {
				finish = resolve;
			});
			return new Response(null, {status: 201});
		});
		const live = handle(request('alive'));
		await vi.advanceTimersByTimeAsync(20_000);

		expect((await handle(request('alive'))).headers.get('retry-after')).toBe('1');
		expect((await handle(request('dead'))).headers.get('retry-after')).toBe('10');
		await vi.advanceTimersByTimeAsync(9000);
		expect((await handle(request('dead'))).headers.get('retry-after')).toBe('1');
		finish();
		await live;
	});
});

describe('what is stored and replayed', () => {
	test('the safe headers are replayed, Set-Cookie and the rest are not; replayHeaders adds names', async () => {
		const {handle} = counted({replayHeaders: ['X-Order-Id']}, () => new Response('{}', {
			status: 201,
			headers: {'content-type': 'application/json', location: '/orders/1', 'set-cookie': 'session=secret', 'x-order-id': '1', 'x-trace': 'abc'},
		}));
		const first = await handle(request('h'));
		const replay = await handle(request('h'));

		expect(first.headers.get('set-cookie')).toBe('session=secret');
		// The key's ttl rides on every keyed answer (the store answers checks); the rest is the stored answer's.
		expect(Object.fromEntries(replay.headers)).toEqual({'content-type': 'application/json', location: '/orders/1', 'x-order-id': '1', 'idempotent-replayed': 'true', 'idempotency-ttl': '86400'});
	});

	test('a 204 is stored and replayed without a body', async () => {
		const {handle, seen} = counted({}, () => new Response(null, {status: 204}));
		await handle(request('empty'));
		const replay = await handle(request('empty'));
		expect(replay.status).toBe(204);
		expect(replay.body).toBeNull();
		expect(seen).toHaveLength(1);
	});

	test('a 4xx answer is stored: the refusal is replayed, not run again', async () => {
		const {handle, seen} = counted({}, () => Response.json({error: 'out of stock'}, {status: 400}));
		await handle(request('refused'));
		const replay = await handle(request('refused'));
		expect(replay.status).toBe(400);
		expect(await replay.json()).toEqual({error: 'out of stock'});
		expect(seen).toHaveLength(1);
	});

	test.each([408, 425, 429, 503])('a %i answer releases the key: a retry runs again', async status => {
		const {handle, seen} = counted({}, run => new Response(null, {status: run === 1 ? status : 204}));
		expect((await handle(request('later'))).status).toBe(status);
		expect((await handle(request('later'))).status).toBe(204);
		expect(seen).toHaveLength(2);
	});

	test('the handler gets the framework context with the key, and the request body unread', async () => {
		const handle = idempotency({store: memoryKeyStore()})<{params: {id: string}}>(async (request, ctx) => Response.json({params: ctx.params, key: ctx.key, body: await request.json() as unknown}));
		const response = await handle(request('ctx', {order: 9}), {params: {id: '42'}});
		expect(await response.json()).toEqual({params: {id: '42'}, key: 'ctx', body: {order: 9}});
	});

	test('a handler that returns no Response fails the request with a TypeError and frees the key', async () => {
		const store = memoryKeyStore();
		const handle = idempotency({store})(async () => ({status: 201}) as unknown as Response);
		await expect(handle(request('not-a-response'))).rejects.toThrow(/^Expected the handler to return a Response, got object/);
		expect(await store.claim('not-a-response', {fingerprint: 'f', lease: 1000, ttl: 60_000})).toMatchObject({state: 'claimed'});
	});

	test('a store that fails after the work still sends the answer, and reports the failure', async () => {
		const store = memoryKeyStore();
		const errors: unknown[] = [];
		const broken = {...store, complete: async () => {
			throw new Error('redis is gone');
		}};
		const handle = idempotency({store: broken, onError: (error, context) => errors.push([String(error), context])})(async () => new Response('done', {status: 201}));
		expect(await (await handle(request('lost'))).text()).toBe('done');
		expect(errors).toEqual([['Error: redis is gone', {key: 'lost', phase: 'complete', fence: expect.any(Number)}]]);
	});
});

describe('round trips to the store', () => {
	test('a first request costs one store call before the handler and one after; a replay, a 409 and a 422 one each', async () => {
		const inner = memoryKeyStore();
		const calls: string[] = [];
		const store = {
			claim: async (...args: Parameters<typeof inner.claim>) => (calls.push('claim'), inner.claim(...args)),
			renew: async (...args: Parameters<typeof inner.renew>) => (calls.push('renew'), inner.renew(...args)),
			complete: async (...args: Parameters<typeof inner.complete>) => (calls.push('complete'), inner.complete(...args)),
			release: async (...args: Parameters<typeof inner.release>) => (calls.push('release'), inner.release(...args)),
		};
		let finish!: () => void;
		const handle = idempotency({store})(async () => {
			calls.push('handler');
			await new Promise<void>(resolve => {
				finish = resolve;
			});
			return new Response('ok', {status: 201});
		});

		const first = handle(request('rt'));
		await vi.waitFor(() => {
			expect(calls).toContain('handler');
		});
		expect(calls.splice(0)).toEqual(['claim', 'handler']);
		await handle(request('rt'));
		expect(calls.splice(0)).toEqual(['claim']);
		finish();
		await first;
		expect(calls.splice(0)).toEqual(['complete']);
		await handle(request('rt'));
		await handle(request('rt', {other: true}));
		expect(calls).toEqual(['claim', 'claim']);
	});
});

describe('CORS', () => {
	const origin = 'https://shop.test';

	test('a preflight is answered with the key header allowed, without running the handler', async () => {
		const {handle, seen} = counted({cors: {origin, allowHeaders: ['Authorization']}});
		const response = await handle(new Request('http://api.test/orders', {method: 'OPTIONS', headers: {origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'idempotency-key, content-type'}}));

		expect(response.status).toBe(204);
		expect(Object.fromEntries(response.headers)).toMatchObject({
			'access-control-allow-origin': origin,
			'access-control-allow-methods': 'POST, PUT, PATCH, DELETE',
			'access-control-allow-headers': 'Idempotency-Key, Content-Type, Idempotency-Check, Authorization',
			'access-control-max-age': '600',
			vary: 'Origin',
		});
		expect(seen).toEqual([]);
	});

	test('every answer (first, replay, 409, 422, 400) exposes Idempotent-Replayed and Retry-After to the allowed origin', async () => {
		const {handle} = counted({cors: {origin: [origin], credentials: true}});
		const answers = [
			await handle(request('c', {a: 1}, {headers: {origin}})),
			await handle(request('c', {a: 1}, {headers: {origin}})),
			await handle(request('c', {a: 2}, {headers: {origin}})),
			await handle(request('', {a: 2}, {headers: {origin}})),
		];
		expect(answers.map(answer => answer.status)).toEqual([201, 201, 422, 400]);
		for (const answer of answers) {
			expect(answer.headers.get('access-control-allow-origin')).toBe(origin);
			expect(answer.headers.get('access-control-expose-headers')).toBe('Idempotent-Replayed, Retry-After, Idempotency-Status, Idempotency-TTL');
			expect(answer.headers.get('access-control-allow-credentials')).toBe('true');
		}
	});

	test('an origin not allowed gets no CORS headers; cors: true allows any origin without credentials', async () => {
		const strict = counted({cors: {origin}});
		const refused = await strict.handle(request('o', {}, {headers: {origin: 'https://evil.test'}}));
		expect(refused.headers.get('access-control-allow-origin')).toBeNull();

		const open = counted({cors: true});
		const any = await open.handle(request('o', {}, {headers: {origin: 'https://any.test'}}));
		expect(any.headers.get('access-control-allow-origin')).toBe('*');
		expect(any.headers.get('vary')).toBeNull();
	});
});

describe('options are checked once, with a message naming the option', () => {
	test.each([
		[{ttl: 0}, /^Expected `ttl` to be a positive integer, got 0/],
		[{lease: 1.5}, /^Expected `lease` to be a positive integer, got 1.5/],
		[{lease: 2 ** 31, ttl: 2 ** 32}, /^Expected `lease` to be at most 2147483647 ms \(24.8 days\), got 2147483648/],
		[{lease: 10_000, ttl: 5000}, /^Expected `ttl` \(5000 ms\) to be at least `lease` \(10000 ms\)/],
		[{store: {claim() {}}}, /^Expected `store` to be a key store with claim, renew, complete and release/],
		[{scope: 'user'}, /^Expected `scope` to be a function of the request, got "user"/],
		[{required: 'yes'}, /^Expected `required` to be a boolean, got "yes"/],
		[{headerName: 'Idempotency Key'}, /^Expected `headerName` to be a header name/],
		[{methods: []}, /^Expected `methods` to be a non-empty array of HTTP methods/],
		[{retryAfter: -1}, /^Expected `retryAfter` to be a non-negative integer, got -1/],
		[{cors: {origin: '*', credentials: true}}, /^Expected `cors.origin` to name the allowed origins when `cors.credentials` is true/],
		[{cors: {origin: 42}}, /^Expected `cors.origin` to be '\*', an origin, a non-empty array of origins or a function/],
		[{replayHeaders: ['bad header']}, /^Expected `replayHeaders` to be an array of header names/],
	])('%o throws a TypeError', (options, message) => {
		expect(() => idempotency(options as IdempotencyOptions)).toThrow(TypeError);
		expect(() => idempotency(options as IdempotencyOptions)).toThrow(message);
	});

	test('a scope that returns no string fails the request with a TypeError, before anything is claimed', async () => {
		const store = memoryKeyStore();
		const handle = idempotency({store, scope: () => undefined as unknown as string})(async () => new Response('no'));
		await expect(handle(request('s'))).rejects.toThrow(/^Expected `scope` to return a string, got undefined/);
		expect(store.size).toBe(0);
	});
});

// What a hostile review of the lease mode and the pre-steps found (each failed before its fix).
describe('lease mode and the pre-steps, as a hostile review tried them', () => {
	test('a handler running longer than ttl keeps its key while it renews its lease: the duplicate gets 409, never a run beside it', async () => {
		vi.useFakeTimers();
		let running = 0;
		let beside = 0;
		const {handle, seen} = counted({lease: 300, ttl: 600}, async () => {
			if (++running > 1) beside++;
			await new Promise(resolve => setTimeout(resolve, 1500));
			running--;
			return new Response(null, {status: 201});
		});
		const first = handle(request('long'));
		await vi.advanceTimersByTimeAsync(900);
		expect((await handle(request('long'))).status).toBe(409);
		await vi.advanceTimersByTimeAsync(1000);
		expect((await first).status).toBe(201);
		expect(seen).toEqual(['long']);
		expect(beside).toBe(0);
	});

	test.each([['with a key', 'assigned'], ['without one', undefined]])('a handler may replace its signal %s, as it could when the signal was made up front', async (_, key) => {
		const handle = idempotency({store: memoryKeyStore()})(async (request, ctx) => {
			const combined = AbortSignal.any([ctx.signal, request.signal]);
			ctx.signal = combined;
			Object.assign(ctx, {signal: combined});
			return Response.json({same: ctx.signal === combined, keys: Object.keys(ctx)}, {status: 201});
		});
		const answer = await handle(request(key));
		expect(answer.status).toBe(201);
		expect(await answer.json()).toEqual({same: true, keys: ['key', 'fence', 'downstreamKey', 'signal']});
	});

	test('a claim that came back slowly is renewed at once: its signal stays whole while its lease does', async () => {
		vi.useFakeTimers();
		const store = memoryKeyStore();
		// A claim that waits 700 ms (a queue for a pooled connection) on a lease of 1000 ms.
		const slow = {...store, claim: async (...args: Parameters<typeof store.claim>) => {
			await new Promise(resolve => setTimeout(resolve, 700));
			return store.claim(...args);
		}};
		let signal: AbortSignal | undefined;
		const handle = idempotency({store: slow, lease: 1000})(async (_request, ctx) => {
			signal = ctx.signal;
			await new Promise(resolve => setTimeout(resolve, 1500));
			return new Response(null, {status: 201});
		});
		const answer = handle(request('slow-claim'));
		await vi.advanceTimersByTimeAsync(2300);
		expect(signal?.aborted).toBe(false);
		expect((await answer).status).toBe(201);
	});

	test.each([
		['two lone surrogates a store would write alike', 'tenant-\uD800'],
		['a NUL', 'tenant\u0000'],
		['more than 2,048 bytes of UTF-8', 'é'.repeat(1025)],
	])('a scope of %s is refused with a TypeError before anything is claimed', async (_, scope) => {
		const store = memoryKeyStore();
		const handle = idempotency({store, scope: () => scope})(async () => new Response(null, {status: 201}));
		await expect(handle(request('scoped'))).rejects.toThrow(/^Expected `scope` to return well-formed text without NUL, at most 2048 bytes of UTF-8/);
		expect(store.size).toBe(0);
	});

	test.each([
		['64-bit ids', '{"product": 12345678901234567890}', '{"product": 12345678901234567891}'],
		['amounts past 2^53', '{"cents": 9007199254740993}', '{"cents": 9007199254740992}'],
		['a repeated member name', '{"to": "alice", "to": "mallory"}', '{"to": "mallory"}'],
		['decimals past double precision', '{"rate": 0.30000000000000001}', '{"rate": 0.3}'],
	])('JSON bodies that JSON.parse cannot tell apart (%s) are two requests: the second is 422', async (_, first, second) => {
		const {handle, seen} = counted();
		const send = async (body: string) => handle(new Request('http://api.test/orders', {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': 'precise'}, body}));
		expect((await send(first)).status).toBe(201);
		expect((await send(second)).status).toBe(422);
		expect(seen).toHaveLength(1);
	});
});
