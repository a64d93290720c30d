// A check racing its original request, through `idempotency()`, over every lease store: many
// rounds in random order, with handlers that succeed, throw or answer 503. Whatever the order, a
// check that says `closed` means the handler never ran and never will; one that says anything else
// never hides an effect. (The store-level race is in check-contract.test.ts.)
import {randomUUID} from 'node:crypto';
import {afterAll, beforeAll, describe, expect, test} from 'vitest';
import {idempotency, type KeyStore} from '../../src/server.js';
import {storeKinds, type OpenStore} from './stores.js';

const ROUNDS = 120;
const BEHAVIOURS = ['ok', 'throw', '503'] as const;

/** A small deterministic generator, so that a failing round can be run again. */
function random(seed: number) {
	let state = seed >>> 0;
	return () => {
		state = (state * 1_664_525 + 1_013_904_223) >>> 0;
		return state / 2 ** 32;
	};
}

for (const kind of storeKinds) {
	describe.skipIf(!kind.available)(`a check racing its original: ${kind.name}`, () => {
		let opened: OpenStore;
		let store: KeyStore;
		beforeAll(async () => {
			opened = await kind.open();
			store = opened.store;
		});
		afterAll(async () => opened?.close());

		test(`${ROUNDS} rounds: never "closed" for a key whose handler ran, and nothing runs after "closed"`, async () => {
			const seed = Number(process.env.CHECK_RACE_SEED ?? Date.now() % 1_000_000);
			const next = random(seed);
			const effects = new Map<string, number>();
			const behaviour = new Map<string, (typeof BEHAVIOURS)[number]>();
			const handle = idempotency({store, clockSkew: 0, onError: () => undefined})(async (_request, {key}) => {
				const how = behaviour.get(key!)!;
				// The effect happens first, then the answer: a throw or a 503 after it is the case a check must not call "never ran".
				effects.set(key!, (effects.get(key!) ?? 0) + 1);
				await new Promise(resolve => setTimeout(resolve, Math.floor(next() * 3)));
				if (how === 'throw') throw new Error('after the effect');
				return how === '503' ? new Response('busy', {status: 503}) : Response.json({ok: true}, {status: 201});
			});
			// The keys are made after the store started remembering (Redis's marker is in microseconds, a key's time in milliseconds).
			await new Promise(resolve => setTimeout(resolve, 5));
			const created = Date.now();
			const seen = new Map<string, number>();
			for (let round = 0; round < ROUNDS; round++) {
				const key = `race-${round}-${randomUUID()}`;
				behaviour.set(key, BEHAVIOURS[Math.floor(next() * BEHAVIOURS.length)]!);
				const original = async () => {
					await new Promise(resolve => setTimeout(resolve, Math.floor(next() * 3)));
					return handle(new Request('http://api.test/orders', {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': key}, body: '{"order":1}'})).catch(() => undefined);
				};

				const check = async () => {
					await new Promise(resolve => setTimeout(resolve, Math.floor(next() * 3)));
					return handle(new Request('http://api.test/orders', {method: 'POST', headers: {'idempotency-key': key, 'idempotency-check': `created=${created}`}}));
				};

				const [answer, checked] = await Promise.all([original(), check()]);
				const state = checked.headers.get('idempotency-status')!;
				seen.set(state, (seen.get(state) ?? 0) + 1);
				const ran = effects.get(key) ?? 0;
				const context = `${kind.name}, seed ${seed}, round ${round}, ${behaviour.get(key)}: check ${state}, original ${answer?.status}, ${ran} runs`;
				if (state === 'closed') {
					expect(ran, context).toBe(0);
					expect(answer?.status, context).toBe(410);
					// Sent again later: still refused, still nothing run.
					expect((await original())?.status, context).toBe(410);
					expect(effects.get(key) ?? 0, context).toBe(0);
				} else {
					expect(['running', 'done', 'released'], context).toContain(state);
					expect(ran, context).toBe(1);
				}
			}

			// Both sides of the race were seen: the check came first in some rounds, the claim in others.
			expect(seen.get('closed') ?? 0, JSON.stringify([...seen])).toBeGreaterThan(0);
			expect(ROUNDS - (seen.get('closed') ?? 0), JSON.stringify([...seen])).toBeGreaterThan(0);
		});
	});
}
