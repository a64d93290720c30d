import {createServer, type Server} from 'node:http';
import type {AddressInfo} from 'node:net';
import fc from 'fast-check';
import {afterAll, beforeAll, describe, expect, test} from 'vitest';
import {createClient} from '../../src/index.js';
import {idempotency, toNodeHandler} from '../../src/server.js';
import {anyFault} from '../server/fault-arbitrary.js';
import {FaultProxy} from '../server/fault-proxy.js';
import {storeKinds, type OpenStore} from './stores.js';

// The client's own fault test (test/integration/property.test.ts), against sendonce/server on
// each store instead of the test server: lost replies, 5xx before and after the work, dropped
// connections and work slower than the client's timeout, in any order.
// FaultProxy cannot answer 429 itself.
const fault = anyFault({rateLimit: false});

for (const kind of storeKinds) {
	describe.skipIf(!kind.available)(`the client against sendonce/server on ${kind.name}`, () => {
		let opened: OpenStore;
		let server: Server;
		let proxy: FaultProxy;
		const effects = new Map<string, number>();
		let inFlight = 0;

		beforeAll(async () => {
			opened = await kind.open();
			const once = idempotency({store: opened.store, lease: 5000});
			server = createServer(toNodeHandler(once(async request => {
				inFlight++;
				try {
					const slow = Number(request.headers.get('x-fault-slow-ms') ?? 0);
					if (slow > 0) await new Promise(resolve => setTimeout(resolve, slow));
					const {order} = await request.json() as {order: string};
					effects.set(order, (effects.get(order) ?? 0) + 1);
					return Response.json({order, effects: effects.get(order)}, {status: 201});
				} finally {
					inFlight--;
				}
			})));
			await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
			proxy = await new FaultProxy(`http://127.0.0.1:${(server.address() as AddressInfo).port}`).listen();
		});

		afterAll(async () => {
			await proxy?.close();
			server?.closeAllConnections();
			await new Promise(resolve => server?.close(resolve));
			await opened?.close();
		});

		test('under any sequence of faults: 0 duplicates, and every succeeded intent has its one effect', async () => {
			let run = 0;
			await fc.assert(
				fc.asyncProperty(fc.array(fault, {maxLength: 10}), fc.integer({min: 1, max: 3}), fc.integer({min: 1, max: 6}), async (faults, intents, limit) => {
					const id = ++run;
					proxy.faults.length = 0;
					proxy.faults.push(...faults.map(item => item ?? {type: 'slow', ms: 0} as const));
					const client = createClient({store: 'memory', timeout: 40, retry: {limit, baseDelay: 1, maxDelay: 10, budget: false}});
					const results = await Promise.all(Array.from({length: intents}, async (_, index) => {
						const intent = await client.intent(`order-${index}`, {url: `${proxy.url}/orders`, json: {order: `o-${id}-${index}`}});
						return intent.send();
					}));

					// Work the client gave up on may still be running: count once it is done.
					await expect.poll(() => inFlight).toBe(0);
					for (const [index, result] of results.entries()) {
						const count = effects.get(`o-${id}-${index}`) ?? 0;
						expect(count).toBeLessThanOrEqual(1);
						if (result.status === 'succeeded') expect(count).toBe(1);
						expect(['succeeded', 'unresolved']).toContain(result.status);
					}
				}),
				{numRuns: 12},
			);

			const duplicates = [...effects.values()].reduce((total, count) => total + Math.max(0, count - 1), 0);
			expect(duplicates).toBe(0);
			expect(effects.size).toBeGreaterThan(0);
		}, 60_000);
	});
}
