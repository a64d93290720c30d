/*
 * Breaks the fingerprint: a key reused with another body gets the first body's answer, as if the
 * key alone named the request. The honest server, shown the first body a key came with.
 */
import {honestServer, type TestServer} from '../honest.js';

export function noFingerprint(): TestServer {
	const server = honestServer();
	const bodies = new Map<string, string>();
	return {
		executions: server.executions,
		async handle(request) {
			const key = request.headers.get('idempotency-key');
			if (key === null || request.method === 'OPTIONS') return server.handle(request);
			const scoped = `${request.headers.get('authorization') ?? ''} ${key}`;
			const body = bodies.get(scoped) ?? await request.text();
			bodies.set(scoped, body);
			return server.handle(new Request(request.url, {method: request.method, headers: request.headers, body}));
		},
	};
}
