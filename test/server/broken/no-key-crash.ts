// Breaks the missing key's answer: a request without a key fails with 500 (its code reads the header unchecked), after it may have run.
import {honestServer, type TestServer} from '../honest.js';

export function noKeyCrash(): TestServer {
	const server = honestServer();
	return {
		executions: server.executions,
		handle: async request => (request.method !== 'OPTIONS' && !request.headers.has('idempotency-key')
			? new Response('Internal Server Error', {status: 500, headers: {'content-type': 'text/plain'}})
			: server.handle(request)),
	};
}
