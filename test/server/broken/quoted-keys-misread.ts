/*
 * Breaks the sf-string syntax of the key, each in its own way:
 * - `verbatim`: takes the header's value as it comes, so `"k"` and `k` are two keys (a client
 *   that sends the draft's form and one that sends it raw run the action twice);
 * - `outside-quotes`: keeps what is outside the quotes (a hand-written parser that splits on
 *   them), so every quoted key reads as one key, and one action replays another's answer.
 * Everything else is the honest server's.
 */
import {honestServer, type TestServer} from '../honest.js';

export function quotedKeysMisread(how: 'verbatim' | 'outside-quotes'): TestServer {
	const server = honestServer();
	return {
		executions: server.executions,
		async handle(request) {
			const key = request.headers.get('idempotency-key');
			if (key === null || !key.startsWith('"')) return server.handle(request);
			// The honest server parses sf-strings; what it is handed is the key this server reads.
			const read = how === 'verbatim' ? `q${key.replaceAll('"', '')}` : 'q';
			const headers = new Headers(request.headers);
			headers.set('idempotency-key', read);
			return server.handle(new Request(request.url, {method: request.method, headers, body: await request.text()}));
		},
	};
}
