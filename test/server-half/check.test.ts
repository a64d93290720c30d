// A check of a key through `idempotency()` (docs/server-contract.md, "Checking a key"): the same
// route, the key and `Idempotency-Check: created=<ms>`; the answer says what the server can prove.
import {describe, expect, test, vi} from 'vitest';
import {idempotency, memoryKeyStore, type IdempotencyOptions, type KeyStore} from '../../src/server.js';

const URL_ORDERS = 'http://api.test/orders';

function original(key: string, body: unknown = {order: 1}, headers: Record<string, string> = {}): Request {
	return new Request(URL_ORDERS, {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': key, ...headers}, body: JSON.stringify(body)});
}

function check(key: string, created: number | string = Date.now(), headers: Record<string, string> = {}): Request {
	return new Request(URL_ORDERS, {method: 'POST', headers: {'idempotency-key': key, 'idempotency-check': typeof created === 'number' ? `created=${created}` : created, ...headers}});
}

/** A memory store that has been up for an hour: it remembers every claim of the last hour. */
function upForAnHour(): KeyStore {
	vi.useFakeTimers({toFake: ['Date']});
	vi.setSystemTime(Date.now() - 3_600_000);
	const store = memoryKeyStore();
	vi.useRealTimers();
	return store;
}

/** A route that counts its runs. */
function route(options: IdempotencyOptions = {}, answer: (run: number) => Response | Promise<Response> = run => Response.json({run}, {status: 201})) {
	const runs: string[] = [];
	const store = options.store ?? upForAnHour();
	const handle = idempotency({...options, store})(async (request, {key}) => {
		runs.push(key!);
		return answer(runs.length);
	});
	return {handle, runs, store};
}

const state = (response: Response) => response.headers.get('idempotency-status');

describe('a check of a key', () => {
	test('after the work: the stored answer, as a replay, marked done; nothing runs again', async () => {
		const {handle, runs} = route();
		await handle(original('k1'));
		const response = await handle(check('k1'));
		expect(response.status).toBe(201);
		expect(state(response)).toBe('done');
		expect(response.headers.get('idempotent-replayed')).toBe('true');
		expect(await response.json()).toEqual({run: 1});
		expect(runs).toEqual(['k1']);
	});

	test('never arrived: closed, and the original arriving late is refused with 410 and runs nothing', async () => {
		const {handle, runs} = route();
		const response = await handle(check('k2'));
		expect(response.status).toBe(200);
		expect(state(response)).toBe('closed');
		expect(await response.json()).toEqual({status: 'closed', ttl: 86_400});
		const late = await handle(original('k2'));
		expect(late.status).toBe(410);
		expect(state(late)).toBe('closed');
		expect(late.headers.get('content-type')).toBe('application/problem+json');
		expect(await late.json()).toMatchObject({title: 'Idempotency key closed'});
		// Checked again, and sent again: the same answers.
		expect(state(await handle(check('k2')))).toBe('closed');
		expect((await handle(original('k2'))).status).toBe(410);
		expect(runs).toEqual([]);
	});

	test('while the first request runs: 409 with Retry-After, marked running; the run ends as usual', async () => {
		let open!: () => void;
		const gate = new Promise<void>(resolve => {
			open = resolve;
		});
		const {handle, runs} = route({}, async run => {
			await gate;
			return Response.json({run}, {status: 201});
		});
		const first = handle(original('k3'));
		await new Promise(resolve => setTimeout(resolve, 10));
		const response = await handle(check('k3'));
		expect(response.status).toBe(409);
		expect(state(response)).toBe('running');
		expect(response.headers.get('retry-after')).toBe('1');
		open();
		expect((await first).status).toBe(201);
		expect(state(await handle(check('k3')))).toBe('done');
		expect(runs).toEqual(['k3']);
	});

	test.each([
		['threw', async () => {
			throw new Error('down');
		}],
		['answered 503', async () => new Response('busy', {status: 503})],
	])('after a handler that %s: released (it may have run), and a retry runs it again', async (_, fail) => {
		let calls = 0;
		const {handle, runs} = route({onError: () => undefined}, async run => {
			calls++;
			return calls === 1 ? fail() : Response.json({run}, {status: 201});
		});
		await handle(original('k4')).catch(() => undefined);
		const response = await handle(check('k4'));
		expect(response.status).toBe(200);
		expect(state(response)).toBe('released');
		expect(await response.json()).toEqual({status: 'released', ttl: 86_400});
		expect((await handle(original('k4'))).status).toBe(201);
		expect(runs).toEqual(['k4', 'k4']);
	});

	test('a key made before the server remembers every claim (a restarted memory store), or within its clock skew of that, is unknown, and left open', async () => {
		const {handle, runs} = route();
		const response = await handle(check('k5', Date.now() - 3_600_000));
		expect(response.status).toBe(200);
		expect(state(response)).toBe('unknown');
		expect((await handle(original('k5'))).status).toBe(201);
		// A store up for a minute, a key made just now: its client's clock may be 10 minutes fast.
		const young = route({store: memoryKeyStore()});
		expect(state(await young.handle(check('k5b')))).toBe('unknown');
		// Trusting clocks to within a second, the same store can prove it.
		const trusting = route({store: memoryKeyStore(), clockSkew: 0});
		expect(state(await trusting.handle(check('k5c')))).toBe('closed');
		expect(runs).toEqual(['k5']);
	});

	test('a key made more than a ttl ago is unknown: its claim may have been forgotten', async () => {
		const {handle} = route({ttl: 600_000, clockSkew: 0});
		expect(state(await handle(check('k5d', Date.now() - 700_000)))).toBe('unknown');
	});

	test('a store that cannot answer checks says unknown, and every keyed answer leaves out Idempotency-TTL', async () => {
		const plain = memoryKeyStore();
		const store: KeyStore = {claim: plain.claim, renew: plain.renew, complete: plain.complete, release: plain.release};
		const {handle, runs} = route({store});
		const answered = await handle(original('k6'));
		expect(answered.headers.get('idempotency-ttl')).toBeNull();
		const response = await handle(check('k7'));
		expect(state(response)).toBe('unknown');
		expect((await handle(original('k7'))).status).toBe(201);
		expect(runs).toEqual(['k6', 'k7']);
	});

	test('every keyed answer says how long keys are kept, where checks are answered', async () => {
		const {handle} = route({ttl: 3_600_000});
		const first = await handle(original('k8'));
		expect(first.headers.get('idempotency-ttl')).toBe('3600');
		expect((await handle(original('k8'))).headers.get('idempotency-ttl')).toBe('3600');
		expect((await handle(check('k8'))).headers.get('idempotency-ttl')).toBe('3600');
	});

	test.each([
		['no created', ''],
		['a word', 'soon'],
		['a negative time', 'created=-5'],
		['a time with a fraction', 'created=1.5'],
		['an age that is not a number', 'created=5, age=soon'],
		['an unknown field', 'created=5, when=6'],
	])('%s gets 400 problem+json and closes nothing', async (_, header) => {
		const {handle, runs} = route();
		const response = await handle(check('k9', header));
		expect(response.status).toBe(400);
		expect(await response.json()).toMatchObject({title: 'Malformed idempotency check'});
		expect((await handle(original('k9'))).status).toBe(201);
		expect(runs).toEqual(['k9']);
	});

	test('a client clock that runs fast: `age` (by that clock) says the key is older than `created` does, and the earlier one is believed', async () => {
		// Each key ran, then the store forgot its claims (a restart); the client's clock runs 3 s fast.
		const store = memoryKeyStore();
		const {handle, runs} = route({store, clockSkew: 0});
		for (const key of ['k14', 'k17']) await handle(original(key));
		store.clear();
		const made = Date.now() - 3000;
		// By `created` alone the keys look made after the store forgot: one with it alone is closed,
		// which `clockSkew` is there to prevent (a client running fast by more than it is not believed)…
		expect(state(await handle(check('k14', `created=${made + 3000}`)))).toBe('closed');
		// …and `age`, measured by the same clock, prevents whatever the skew.
		expect(state(await handle(check('k17', `created=${made + 3000}, age=${Date.now() - made}`)))).toBe('unknown');
		expect((await handle(original('k17'))).status).toBe(201);
		expect(runs).toEqual(['k14', 'k17', 'k17']);
	});

	test('`created` and `age` together, `,` or `;` between them, close a key made after the store began, as `created` alone does', async () => {
		const {handle, runs} = route({clockSkew: 0});
		const created = Date.now() - 5000;
		expect(state(await handle(check('k15', `created=${created}, age=5000`)))).toBe('closed');
		expect(state(await handle(check('k16', `created=${created};age=5000`)))).toBe('closed');
		expect((await handle(original('k15'))).status).toBe(410);
		expect(runs).toEqual([]);
	});

	test('a malformed key gets 400, as any request with it does', async () => {
		const {handle} = route();
		const response = await handle(check('a b'));
		expect(response.status).toBe(400);
		expect(await response.json()).toMatchObject({title: 'Malformed idempotency key'});
	});

	test('another user can neither learn about a key nor close it: per-user scope', async () => {
		const {handle, runs} = route({scope: (request: Request) => request.headers.get('x-user') ?? 'anonymous'});
		await handle(original('k10', {order: 1}, {'x-user': 'ada'}));
		// Mallory asks about Ada's key: his scope holds nothing of it.
		const asked = await handle(check('k10', Date.now(), {'x-user': 'mallory'}));
		expect(state(asked)).toBe('closed');
		expect(await asked.text()).not.toContain('run');
		// Mallory closes "k11" in his scope before Ada's request: Ada's runs.
		await handle(check('k11', Date.now(), {'x-user': 'mallory'}));
		expect((await handle(original('k11', {order: 2}, {'x-user': 'ada'}))).status).toBe(201);
		expect(state(await handle(check('k10', Date.now(), {'x-user': 'ada'})))).toBe('done');
		expect(runs).toEqual(['k10', 'k11']);
	});

	test('a body on a check is not read, and changes nothing', async () => {
		const {handle, runs} = route();
		const response = await handle(new Request(URL_ORDERS, {method: 'POST', headers: {'idempotency-key': 'k12', 'idempotency-check': `created=${Date.now()}`, 'content-type': 'application/json'}, body: '{"order":1}'}));
		expect(state(response)).toBe('closed');
		expect(runs).toEqual([]);
	});

	test('CORS: the preflight allows Idempotency-Check, and answers expose Idempotency-Status and Idempotency-TTL', async () => {
		const {handle} = route({cors: {origin: ['https://shop.test']}});
		const preflight = await handle(new Request(URL_ORDERS, {method: 'OPTIONS', headers: {origin: 'https://shop.test', 'access-control-request-method': 'POST', 'access-control-request-headers': 'idempotency-key, idempotency-check'}}));
		expect(preflight.headers.get('access-control-allow-headers')).toMatch(/Idempotency-Check/);
		const response = await handle(check('k13', Date.now(), {origin: 'https://shop.test'}));
		expect(response.headers.get('access-control-expose-headers')).toMatch(/Idempotency-Status.*Idempotency-TTL/);
	});

	test('a burst of checks holds no lease: a request with the key, sent amid them, runs once', async () => {
		const {handle, runs} = route();
		await handle(original('k14'));
		const answers = await Promise.all(Array.from({length: 50}, async () => handle(check('k14'))));
		expect(new Set(answers.map(state))).toEqual(new Set(['done']));
		expect(runs).toEqual(['k14']);
	});
});
