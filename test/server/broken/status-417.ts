// Breaks the draft's status for a key reused with another body: 417, as express-idempotency answers, not 422.
import {honestServer, type TestServer} from '../honest.js';

export function status417(): TestServer {
	const server = honestServer();
	return {
		executions: server.executions,
		async handle(request) {
			const response = await server.handle(request);
			return response.status === 422 ? new Response(response.body, {status: 417, headers: response.headers}) : response;
		},
	};
}
