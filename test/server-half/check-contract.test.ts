// The check of a key (docs/server-contract.md, "Checking a key"), as every lease store must
// answer it: what a check finds in each state a key can be in, that only a key no claim ever
// touched is closed, and that a check racing a claim never gives both a run and a "closed".
import {randomUUID} from 'node:crypto';
import {afterAll, afterEach, beforeAll, describe, expect, test, vi} from 'vitest';
import type {KeyStore, StoredAnswer} from '../../src/server.js';
import {storeKinds, type OpenStore} from './stores.js';

const LONG = 30_000;
const TTL = 60_000;
const answer: StoredAnswer = {status: 201, headers: [['content-type', 'application/json']], body: new TextEncoder().encode('{"id":7}')};
const claim = (lease = LONG) => ({fingerprint: 'f1', lease, ttl: TTL});

for (const kind of storeKinds) {
	describe.skipIf(!kind.available)(`check contract: ${kind.name}`, {concurrent: !kind.fakeClock}, () => {
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

		let serial = 0;
		const id = () => `check-${++serial}-${randomUUID()}`;
		/** A check of a key made just now (after the store was opened), as a client asks it. */
		const check = async (key: string, from = Date.now()) => store.check!(key, {from, ttl: TTL});

		test('the store answers checks', () => {
			expect(typeof store.check).toBe('function');
		});

		test('a key no claim touched is closed, stays closed, and every later claim of it is refused', async () => {
			const key = id();
			expect(await check(key)).toEqual({state: 'closed'});
			expect(await check(key)).toEqual({state: 'closed'});
			expect(await store.claim(key, claim())).toEqual({state: 'closed'});
			expect(await store.claim(key, claim())).toEqual({state: 'closed'});
		});

		test('a running claim is running, with its lease left, and the check changes nothing of it', async () => {
			const key = id();
			const taken = await store.claim(key, claim());
			expect(taken.state).toBe('claimed');
			const found = await check(key);
			expect(found).toMatchObject({state: 'running'});
			expect(found.state === 'running' && found.leaseLeft).toBeGreaterThan(0);
			const {fence} = taken as {fence: number};
			expect(await store.complete(key, {fence, fingerprint: 'f1', answer, ttl: TTL})).toBe(true);
			expect(await check(key)).toMatchObject({state: 'done', fingerprint: 'f1', answer: {status: 201}});
		});

		test('an answered key is done, with its answer, byte for byte', async () => {
			const key = id();
			const {fence} = await store.claim(key, claim()) as {fence: number};
			await store.complete(key, {fence, fingerprint: 'f1', answer, ttl: TTL});
			const found = await check(key);
			expect(found).toMatchObject({state: 'done', fingerprint: 'f1', answer: {status: 201, headers: answer.headers}});
			expect(found.state === 'done' && new TextDecoder().decode(found.answer.body)).toBe('{"id":7}');
		});

		test('a released claim is released (it may have run), and a retry still claims the key', async () => {
			const key = id();
			const {fence} = await store.claim(key, claim()) as {fence: number};
			await store.release(key, {fence});
			expect(await check(key)).toEqual({state: 'released'});
			expect(await store.claim(key, claim())).toMatchObject({state: 'claimed'});
		});

		test('a claim whose lease ran out before it answered is released, never closed', async () => {
			const key = id();
			if (kind.fakeClock) vi.useFakeTimers({toFake: ['Date']});
			await store.claim(key, claim(kind.fakeClock ? LONG : 200));
			if (kind.fakeClock) vi.setSystemTime(Date.now() + LONG + 1);
			else await new Promise(resolve => setTimeout(resolve, 300));
			expect(await check(key)).toEqual({state: 'released'});
		});

		test('a key made before the store remembers every claim, or more than a ttl ago, is unknown, and left open', async () => {
			const early = id();
			// Before this store was first used (a restart of memory, a flushed Redis, a new table).
			expect(await check(early, Date.now() - 30 * 24 * 3_600_000)).toEqual({state: 'unknown'});
			expect(await store.claim(early, claim())).toMatchObject({state: 'claimed'});
			const old = id();
			expect(await store.check!(old, {from: Date.now() - 2 * TTL, ttl: TTL})).toEqual({state: 'unknown'});
			expect(await store.claim(old, claim())).toMatchObject({state: 'claimed'});
		});

		test('a check racing a claim of a fresh key: either the claim ran and the check says so, or the key closed and the claim was refused (200 rounds)', async () => {
			const outcomes = new Map<string, number>();
			for (let round = 0; round < 200; round++) {
				const key = id();
				const race = [async () => store.claim(key, claim()), async () => check(key)] as const;
				const [claimed, checked] = round % 2 === 0
					? await Promise.all([race[0](), race[1]()])
					: await Promise.all([race[1](), race[0]()]).then(([b, a]) => [a, b] as const);
				const pair = `${claimed.state}/${checked.state}`;
				outcomes.set(pair, (outcomes.get(pair) ?? 0) + 1);
				expect(['claimed/running', 'closed/closed']).toContain(pair);
			}

			// Both orders happened: the race was a race.
			expect(outcomes.size).toBeGreaterThanOrEqual(1);
		});
	});
}
