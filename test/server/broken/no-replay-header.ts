// Breaks Stripe's marker: replays carry no `Idempotent-Replayed: true`.
import {honestServer, type TestServer} from '../honest.js';

export function noReplayHeader(): TestServer {
	const server = honestServer();
	return {
		executions: server.executions,
		async handle(request) {
			const response = await server.handle(request);
			const headers = new Headers(response.headers);
			headers.delete('idempotent-replayed');
			return new Response(response.body, {status: response.status, headers});
		},
	};
}
