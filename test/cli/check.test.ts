import type {AddressInfo} from 'node:net';
import type {Server} from 'node:http';
import express from 'express';
import {getSharedIdempotencyService, idempotency} from 'express-idempotency';
import {describe, expect, test} from 'vitest';
import {globalKeys} from '../server/broken/global-keys.js';
import {noIdempotency} from '../server/broken/no-idempotency.js';
import {noReplayHeader} from '../server/broken/no-replay-header.js';
import {nonAtomic} from '../server/broken/non-atomic.js';
import {status417} from '../server/broken/status-417.js';
import {honestServer, type TestServer} from '../server/honest.js';
import {serve} from '../server/orders.js';
import {storeKinds} from '../server-half/stores.js';
import {ALL_PROBES, expected, runCheck, TWO_USERS} from './run.js';

/** Serves `server`, runs the check against it with `args`, and closes it. */
async function checkServer(server: TestServer, args: string[]) {
	const served = await serve(async request => server.handle(request));
	try {
		return await runCheck(served.url, args);
	} finally {
		await served.close();
	}
}

describe.each(storeKinds)('against sendonce/server on $name', kind => {
	test.skipIf(!kind.available)('every probe passes, the exit code is 0, and no request ran twice', async () => {
		const {store, close} = await kind.open();
		try {
			const server = honestServer({store});
			const run = await checkServer(server, ALL_PROBES);

			expect(run.verdicts, run.stdout).toEqual(expected({}));
			expect(run.code).toBe(0);
			expect(run.stdout).toMatch(/^8 passed, 0 warned, 0 failed, 0 skipped/m);
			// Every probe's key ran once per user: duplicates, drops, quotes and 20 at once included.
			expect(Math.max(...server.executions.values())).toBe(1);
			expect(server.executions.get('Bearer alice ')).toBeUndefined();
		} finally {
			await close();
		}
	});
});

describe('against servers that each break one rule', () => {
	test('no idempotency at all: every probe of keys fails, a missing key and quoted keys warn; exit 1', async () => {
		const server = noIdempotency();
		const run = await checkServer(server, TWO_USERS);

		expect(run.verdicts, run.stdout).toEqual(expected({'no-key': 'warn', replay: 'fail', 'lost-reply': 'fail', mismatch: 'fail', concurrency: 'fail', 'key-format': 'warn', cors: 'skip'}));
		expect(run.code).toBe(1);
		// The request without a key ran (the first --as is Alice).
		expect(server.executions.get('Bearer alice ')).toBe(1);
	});

	test('a look-up then a create: only the concurrent duplicates fail, each of them run; exit 1', async () => {
		const server = nonAtomic();
		const run = await checkServer(server, TWO_USERS);

		expect(run.verdicts, run.stdout).toEqual(expected({concurrency: 'fail', cors: 'skip'}));
		expect(run.code).toBe(1);
		expect(run.stdout).toMatch(/^FAIL {2}5 Concurrent duplicates: .*it ran more than once; fix: claim the key atomically/m);
		expect(Math.max(...server.executions.values())).toBeGreaterThan(1);
	});

	test('no Idempotent-Replayed header: the two probes that read it warn; exit 0', async () => {
		const run = await checkServer(noReplayHeader(), ALL_PROBES);

		// Probe 5 too: the duplicates got one run's answer, unmarked (a fresh key gets another id).
		expect(run.verdicts, run.stdout).toEqual(expected({replay: 'warn', 'lost-reply': 'warn', concurrency: 'warn'}));
		expect(run.code).toBe(0);
		expect(run.stdout).toMatch(/^WARN {2}2 Same key twice: .*a replay, unmarked; fix: add Idempotent-Replayed: true/m);
	});

	test('417 for a key reused with another body: that probe warns; exit 0', async () => {
		const run = await checkServer(status417(), ALL_PROBES);

		expect(run.verdicts, run.stdout).toEqual(expected({mismatch: 'warn'}));
		expect(run.code).toBe(0);
		expect(run.stdout).toMatch(/^WARN {2}4 Same key, another body: .*then 417 .*refused, but not with 422; fix: answer 422/m);
	});

	test('one key space for all users: keys per user fails; exit 1', async () => {
		const run = await checkServer(globalKeys(), ALL_PROBES);

		expect(run.verdicts, run.stdout).toEqual(expected({'per-user': 'fail'}));
		expect(run.code).toBe(1);
		expect(run.stdout).toMatch(/^FAIL {2}8 Keys per user: .*the second user got the first user's answer/m);
	});
});

describe('against express-idempotency (npm) behind Express, a middleware we did not write', () => {
	test('it claims keys atomically and replays, but unmarked, with 417, 409 without Retry-After, raw keys only and one key space', async () => {
		const executions = new Map<string, number>();
		let next = 0;
		const api = express();
		api.use(express.json());
		api.post('/orders', idempotency(), async (request, response) => {
			if (getSharedIdempotencyService().isHit(request)) return;
			const key = request.get('idempotency-key') ?? '';
			executions.set(key, (executions.get(key) ?? 0) + 1);
			// Work that takes long enough for the 20 concurrent duplicates to meet it in progress.
			await new Promise(resolve => setTimeout(resolve, 500));
			response.status(201).json({id: `ord_${++next}`, ...request.body as object});
		});
		const app: Server = api.listen(0, '127.0.0.1');
		await new Promise(resolve => app.once('listening', resolve));
		try {
			const run = await runCheck(`http://127.0.0.1:${(app.address() as AddressInfo).port}/orders`, TWO_USERS);

			expect(run.verdicts, run.stdout).toEqual({
				'no-key': 'warn', // runs without a key
				replay: 'warn', // replays, without Idempotent-Replayed
				'lost-reply': 'warn', // replays the dropped request's answer, unmarked
				mismatch: 'warn', // 417 (Express's HTML error page), not 422
				concurrency: 'warn', // one execution; the duplicates get 409 without Retry-After, or the replay
				'key-format': 'warn', // "k" is another key than k
				cors: 'skip',
				'per-user': 'fail', // one key space: Bob gets Alice's order
			});
			expect(run.stdout).toMatch(/^WARN {2}5 Concurrent duplicates: .*× 409 without Retry-After/m);
			expect(run.code).toBe(1);
			expect(Math.max(...[...executions].filter(([key]) => key !== '').map(([, count]) => count))).toBe(1);
		} finally {
			app.closeAllConnections();
			await new Promise(resolve => app.close(resolve));
		}
	});
});
