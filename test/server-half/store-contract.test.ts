import {randomUUID} from 'node:crypto';
import {afterAll, afterEach, beforeAll, describe, expect, test, vi} from 'vitest';
import {idempotency, type ClaimResult, type KeyStore, type StoredAnswer} from '../../src/server.js';
import {storeKinds, type OpenStore} from './stores.js';

// Short leases against the real engines where a test waits one out (their clocks cannot be
// faked), and long ones everywhere else, so that a busy machine cannot end a claim early.
const LEASE = 250;
const TTL = 2000;
const LONG = 30_000;

const answer: StoredAnswer = {
	status: 201,
	// Two values of one header are two entries, both kept.
	headers: [['content-type', 'application/octet-stream'], ['location', '/orders/7'], ['link', '</a>; rel=a'], ['link', '</b>; rel=b']],
	// Bytes that are not UTF-8: the body is stored as bytes.
	body: Uint8Array.from([0, 1, 2, 0xff, 0xfe, 0x80, 123]),
};

const claim = (fingerprint = 'f1', lease = LONG) => ({fingerprint, lease, ttl: 60_000});

/** The fence of a claim that took the key (and fails the test when it did not). */
function fenceOf(result: ClaimResult): number {
	expect(result).toMatchObject({state: 'claimed', fence: expect.any(Number)});
	return (result as {fence: number}).fence;
}

for (const kind of storeKinds) {
	// The engines' tests mostly wait out real leases: they wait together. Memory's share one fake clock.
	describe.skipIf(!kind.available)(`key store contract: ${kind.name}`, {concurrent: !kind.fakeClock}, () => {
		let opened: OpenStore;
		let store: KeyStore;
		beforeAll(async () => {
			opened = await kind.open();
			store = opened.store;
		});
		afterAll(async () => opened?.close());
		afterEach(() => {
			vi.useRealTimers();
		});

		// Memory runs on Date.now(), which fake timers move; the engines wait out real time.
		const pass = async (ms: number) => {
			if (kind.fakeClock) vi.setSystemTime(Date.now() + ms);
			else await new Promise(resolve => setTimeout(resolve, ms));
		};

		const fakeClock = () => {
			if (kind.fakeClock) vi.useFakeTimers({toFake: ['Date']});
		};

		let serial = 0;
		const id = () => `key-${++serial}-${randomUUID()}`;

		test('the first claim takes the key with a fence; the next sees it running, with its fingerprint and the lease left', async () => {
			const key = id();
			const first = await store.claim(key, claim('f1'));
			expect(first).toEqual({state: 'claimed', fence: expect.any(Number)});
			expect(Number.isSafeInteger(fenceOf(first))).toBe(true);
			const second = await store.claim(key, claim('f2'));
			expect(second).toMatchObject({state: 'running', fingerprint: 'f1'});
			expect(second.state === 'running' && second.leaseLeft).toBeGreaterThan(0);
			expect(second.state === 'running' && second.leaseLeft).toBeLessThanOrEqual(LONG);
		});

		test('of 25 concurrent claims on one key exactly one takes it', async () => {
			const key = id();
			const results = await Promise.all(Array.from({length: 25}, async () => store.claim(key, claim())));
			expect(results.filter(result => result.state === 'claimed')).toHaveLength(1);
			expect(results.filter(result => result.state === 'running')).toHaveLength(24);
		});

		test('a completed key replays its answer, byte for byte, every header value kept, with the first fingerprint', async () => {
			const key = id();
			const fence = fenceOf(await store.claim(key, claim('f1')));
			expect(await store.complete(key, {fence, fingerprint: 'f1', answer, ttl: 60_000})).toBe(true);

			const replay = await store.claim(key, claim('f1'));
			expect(replay).toMatchObject({state: 'done', fingerprint: 'f1', answer: {status: 201, headers: answer.headers}});
			expect(replay.state === 'done' && [...replay.answer.body]).toEqual([...answer.body]);
			expect(await store.claim(key, claim('other'))).toMatchObject({state: 'done', fingerprint: 'f1'});
		});

		test('a claim whose lease ran out unanswered is taken with a larger fence, naming the old one; the old holder can no longer renew, complete or release', async () => {
			fakeClock();
			const key = id();
			const old = fenceOf(await store.claim(key, claim('f1', LEASE)));
			await pass(LEASE + 50);

			const next = await store.claim(key, claim());
			expect(next).toEqual({state: 'claimed', fence: expect.any(Number), supersedes: old});
			expect(fenceOf(next)).toBeGreaterThan(old);
			expect(await store.renew(key, {fence: old, lease: LEASE, ttl: 60_000})).toBe(false);
			expect(await store.complete(key, {fence: old, fingerprint: 'f1', answer, ttl: 60_000})).toBe(false);
			await store.release(key, {fence: old});
			expect(await store.claim(key, claim())).toMatchObject({state: 'running'});
		});

		test('renewing keeps a claim past its first lease', async () => {
			fakeClock();
			// Renewed every quarter lease: a busy machine may be late by most of a lease and still renew in time.
			const lease = 4 * LEASE;
			const key = id();
			const fence = fenceOf(await store.claim(key, claim('f1', lease)));
			for (let step = 0; step < 5; step++) {
				await pass(lease / 4);
				expect(await store.renew(key, {fence, lease, ttl: 60_000})).toBe(true);
			}

			// More than a lease has passed since the claim: still held.
			expect(await store.claim(key, claim())).toMatchObject({state: 'running'});
			await pass(lease + 50);
			expect(await store.claim(key, claim())).toMatchObject({state: 'claimed', supersedes: fence});
		});

		test('a claim renewed past its ttl is still running, and once abandoned its taker still names it', async () => {
			fakeClock();
			const lease = 4 * LEASE;
			const key = id();
			// A record kept twice the lease (idempotency() keeps it a ttl past the lease): a handler running longer keeps it by renewing.
			const fence = fenceOf(await store.claim(key, {fingerprint: 'f1', lease, ttl: 2 * lease}));
			for (let step = 0; step < 10; step++) {
				await pass(lease / 4);
				expect(await store.renew(key, {fence, lease, ttl: 2 * lease})).toBe(true);
			}

			expect(await store.claim(key, claim())).toMatchObject({state: 'running'});
			await pass(lease + 50);
			expect(await store.claim(key, claim())).toEqual({state: 'claimed', fence: expect.any(Number), supersedes: fence});
		});

		test('an answer completed after the lease ran out, when no one took the key, is still stored', async () => {
			fakeClock();
			const key = id();
			const fence = fenceOf(await store.claim(key, claim('f1', LEASE)));
			await pass(LEASE + 50);
			expect(await store.complete(key, {fence, fingerprint: 'f1', answer, ttl: 60_000})).toBe(true);
			expect(await store.claim(key, claim())).toMatchObject({state: 'done', answer: {status: 201}});
		});

		test('release gives the key up; a release with another fence changes nothing; the next claim has a larger fence and supersedes nothing', async () => {
			const key = id();
			const fence = fenceOf(await store.claim(key, claim()));
			await store.release(key, {fence: fence + 1});
			expect(await store.claim(key, claim())).toMatchObject({state: 'running'});

			await store.release(key, {fence});
			const next = await store.claim(key, claim());
			expect(next).toEqual({state: 'claimed', fence: expect.any(Number)});
			expect(fenceOf(next)).toBeGreaterThan(fence);
		});

		test('every claim of a key has a larger fence than the last, released or answered', async () => {
			fakeClock();
			const key = id();
			const fences: number[] = [];
			for (let round = 0; round < 4; round++) {
				const fence = fenceOf(await store.claim(key, {fingerprint: 'f1', lease: LONG, ttl: TTL}));
				fences.push(fence);
				if (round % 2 === 0) {
					await store.release(key, {fence});
				} else {
					await store.complete(key, {fence, fingerprint: 'f1', answer, ttl: TTL});
					await pass(TTL + 50);
				}
			}

			expect(fences).toEqual([...fences].sort((a, b) => a - b));
			expect(new Set(fences).size).toBe(4);
		});

		test('a stored answer is replayed for its ttl, then the key is free again', async () => {
			fakeClock();
			const key = id();
			const fence = fenceOf(await store.claim(key, claim()));
			await store.complete(key, {fence, fingerprint: 'f1', answer, ttl: TTL});
			expect(await store.claim(key, claim())).toMatchObject({state: 'done'});
			await pass(TTL + 50);
			expect(await store.claim(key, claim())).toEqual({state: 'claimed', fence: expect.any(Number)});
		});

		test('two ids are two keys', async () => {
			const key = id();
			await store.claim(`alice ${key}`, claim());
			expect(await store.claim(`bob ${key}`, claim())).toMatchObject({state: 'claimed'});
		});
	});

	describe.skipIf(!kind.available)(`idempotency() over ${kind.name}`, () => {
		let opened: OpenStore;
		beforeAll(async () => {
			opened = await kind.open();
		});
		afterAll(async () => opened?.close());

		let effects = 0;
		const post = (key: string, body: unknown, headers: Record<string, string> = {}) =>
			new Request('http://api.test/orders', {method: 'POST', headers: {'idempotency-key': key, 'content-type': 'application/json', ...headers}, body: JSON.stringify(body)});

		const make = (extra: Parameters<typeof idempotency>[0] = {}, work: (request: Request) => Promise<Response> | Response = async () => Response.json({effect: ++effects}, {status: 201})) =>
			idempotency({store: opened.store, ...extra})(work);

		test('a duplicate gets the stored answer with Idempotent-Replayed, and the handler runs once', async () => {
			const handle = make();
			const key = randomUUID();
			const first = await handle(post(key, {a: 1, b: 2}));
			// The same values in another key order are the same request.
			const again = await handle(post(key, {b: 2, a: 1}));

			expect(first.status).toBe(201);
			expect(first.headers.get('idempotent-replayed')).toBeNull();
			expect(again.status).toBe(201);
			expect(again.headers.get('idempotent-replayed')).toBe('true');
			expect(again.headers.get('content-type')).toBe('application/json');
			expect(await again.json()).toEqual(await first.json());
		});

		test('the same key with another body gets 422 problem+json', async () => {
			const handle = make();
			const key = randomUUID();
			await handle(post(key, {order: 1}));
			const other = await handle(post(key, {order: 2}));

			expect(other.status).toBe(422);
			expect(other.headers.get('content-type')).toBe('application/problem+json');
			expect(await other.json()).toMatchObject({status: 422, title: 'Idempotency key reused'});
		});

		test('the same key in two scopes runs twice; the same scope replays', async () => {
			const before = effects;
			const handle = make({scope: request => request.headers.get('x-user') ?? 'anonymous'});
			const key = randomUUID();
			const alice = await handle(post(key, {order: 1}, {'x-user': 'alice'}));
			const bob = await handle(post(key, {order: 1}, {'x-user': 'bob'}));
			const aliceAgain = await handle(post(key, {order: 1}, {'x-user': 'alice'}));

			expect(effects - before).toBe(2);
			expect(bob.headers.get('idempotent-replayed')).toBeNull();
			expect(await aliceAgain.json()).toEqual(await alice.json());
		});

		test('a duplicate while the first runs gets 409 with Retry-After', async () => {
			let finish!: () => void;
			const handle = make({retryAfter: 2}, async () => {
				await new Promise<void>(resolve => {
					finish = resolve;
				});
				return new Response('done', {status: 201});
			});
			const key = randomUUID();
			const first = handle(post(key, {order: 1}));
			await vi.waitFor(() => {
				expect(finish).toBeTypeOf('function');
			});
			const duplicate = await handle(post(key, {order: 1}));
			finish();

			expect(duplicate.status).toBe(409);
			expect(duplicate.headers.get('retry-after')).toBe('2');
			expect((await first).status).toBe(201);
		});

		test('a handler that throws or answers 5xx releases the key: the retry runs it again', async () => {
			let calls = 0;
			const outcomes: Array<() => Response> = [
				() => {
					throw new Error('the database went away');
				},
				() => new Response('bad gateway', {status: 502}),
				() => new Response('ok', {status: 201}),
			];
			const handle = make({}, async () => outcomes[calls++]!());
			const key = randomUUID();

			await expect(handle(post(key, {order: 1}))).rejects.toThrow('the database went away');
			expect((await handle(post(key, {order: 1}))).status).toBe(502);
			expect((await handle(post(key, {order: 1}))).status).toBe(201);
			expect((await handle(post(key, {order: 1}))).headers.get('idempotent-replayed')).toBe('true');
			expect(calls).toBe(3);
		});

		test('storeServerErrors: true stores a 5xx and replays it', async () => {
			let calls = 0;
			const handle = make({storeServerErrors: true}, async () => {
				calls++;
				return new Response('broken', {status: 500});
			});
			const key = randomUUID();
			await handle(post(key, {order: 1}));
			const replay = await handle(post(key, {order: 1}));

			expect(replay.status).toBe(500);
			expect(replay.headers.get('idempotent-replayed')).toBe('true');
			expect(await replay.text()).toBe('broken');
			expect(calls).toBe(1);
		});
	});
}
