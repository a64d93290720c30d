// Break the check of a key (docs/server-contract.md, "Checking a key"): a key that ran is called
// `closed` (`'closed'`: the client tells its user "not sent" and sends it again), or `unknown`
// (`'unknown'`: safe, but a check then tells a client nothing).
import {rewrittenServer, type TestServer} from '../honest.js';

export function checkMisread(says: 'closed' | 'unknown'): TestServer {
	return rewrittenServer(response => {
		if (response.headers.get('idempotency-status') !== 'done') return response;
		const headers = new Headers(response.headers);
		headers.set('idempotency-status', says);
		headers.set('content-type', 'application/json');
		headers.delete('idempotent-replayed');
		return new Response(JSON.stringify({status: says, ttl: 86_400}), {status: 200, headers});
	});
}
