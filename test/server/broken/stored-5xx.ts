/*
 * Breaks the draft's rule that a failure the client may retry is not the key's answer: its
 * downstream fails once (the first order it takes), and it stores that 503 under the key, so
 * every retry of that key gets the 503 again. `sendonce/server` with `storeServerErrors: true`.
 * Without `stored`, the honest server behind the same downstream: the 503 releases the key.
 */
import {idempotency, memoryKeyStore} from '../../../src/server.js';
import {honestOptions, type TestServer} from '../honest.js';
import {orders} from '../orders.js';

export function downstreamFailsOnce({stored}: {stored: boolean}): TestServer {
	const created = orders();
	let failed = false;
	const once = idempotency({store: memoryKeyStore(), ...honestOptions, storeServerErrors: stored});
	return {
		executions: created.executions,
		handle: once(async (request, {key}) => {
			if (failed) return created.create(request, key);
			failed = true;
			return Response.json({title: 'Payment provider unavailable'}, {status: 503});
		}),
	};
}
