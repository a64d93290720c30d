// Breaks Stripe's marker: replays carry no `Idempotent-Replayed: true`.
import {rewrittenServer, type TestServer} from '../honest.js';

export function noReplayHeader(): TestServer {
	return rewrittenServer(response => {
		const headers = new Headers(response.headers);
		headers.delete('idempotent-replayed');
		return new Response(response.body, {status: response.status, headers});
	// Long enough that every duplicate sent together meets the first in progress (see constant-unmarked.ts).
	}, 300);
}
