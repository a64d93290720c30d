import fc from 'fast-check';
import {afterAll, beforeAll, expect, test} from 'vitest';
import {createClient} from '../../src/index.js';
import {startContractServer, type ContractServer} from '../server/contract-server.js';
import {anyFault} from '../server/fault-arbitrary.js';

let server: ContractServer;
beforeAll(async () => {
	server = await startContractServer();
});
afterAll(async () => server.close());

const fault = anyFault();

let runs = 0;

test('under any sequence of faults, a succeeded intent has exactly one effect and no intent has two', async () => {
	await fc.assert(
		fc.asyncProperty(
			fc.array(fault, {maxLength: 12}),
			fc.integer({min: 1, max: 4}),
			fc.integer({min: 1, max: 6}),
			async (faults, intents, limit) => {
				// Orders are named per run: a request the last run gave up on may still arrive.
				const run = ++runs;
				server.reset();
				server.faults.push(...faults.map(item => item ?? {type: 'slow', ms: 0} as const));
				const client = createClient({store: 'memory', timeout: 40, retry: {limit, baseDelay: 1, maxDelay: 10, budget: false}});
				const results = await Promise.all(Array.from({length: intents}, async (_, index) => {
					const intent = await client.intent(`order-${index}`, {url: `${server.url}/orders`, json: {order: `o-${run}-${index}`}});
					return intent.send();
				}));

				// Work the client gave up on may still be running: count once it is done.
				await expect.poll(() => server.inFlight).toBe(0);
				for (const [index, result] of results.entries()) {
					const effects = server.effects.get(`o-${run}-${index}`) ?? 0;
					expect(effects).toBeLessThanOrEqual(1);
					if (result.status === 'succeeded') expect(effects).toBe(1);
					expect(result.status === 'succeeded' || result.status === 'unresolved').toBe(true);
				}
			},
		),
		{numRuns: 60},
	);
}, 60_000);
