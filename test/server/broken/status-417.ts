// Breaks the draft's status for a key reused with another body: 417, as express-idempotency answers, not 422.
import {rewrittenServer, type TestServer} from '../honest.js';

export function status417(): TestServer {
	return rewrittenServer(response => (response.status === 422 ? new Response(response.body, {status: 417, headers: response.headers}) : response));
}
