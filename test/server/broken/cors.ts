/*
 * The honest server, allowing a page on `origin`, with its CORS headers right or broken in one
 * way each. `sendonce check --origin` judges them, and a real Chromium on `origin` says whether
 * it lets the request through (test/browser/check-cors.test.ts): the two must agree.
 */
import {honestServer, type TestServer} from '../honest.js';

/** How the CORS headers are set: `right`, `credentialed` (right, for a page that sends cookies), or broken one way. */
export type CorsCase = 'right' | 'credentialed' | 'post-only' | 'key-not-allowed' | 'star-headers' | 'star-headers-credentialed' | 'credentials-with-star' | 'replay-hidden' | 'replay-without-cors' | 'star-exposed-credentialed';

const ALLOW = {'access-control-allow-methods': 'POST, PUT, PATCH, DELETE', 'access-control-allow-headers': 'authorization, content-type, idempotency-key', 'access-control-max-age': '0'};

/** Each case's preflight headers and answer headers, set over the honest server's. */
function headersOf(origin: string, how: CorsCase): {preflight?: Record<string, string>; answer?: Record<string, string>; remove?: string[]} {
	const credentialed = {'access-control-allow-origin': origin, 'access-control-allow-credentials': 'true'};
	switch (how) {
		case 'right': {
			return {};
		}

		case 'credentialed': {
			return {preflight: {...ALLOW, ...credentialed}, answer: credentialed};
		}

		case 'post-only': {
			return {preflight: {...ALLOW, 'access-control-allow-methods': 'POST'}};
		}

		case 'key-not-allowed': {
			return {preflight: {...ALLOW, 'access-control-allow-headers': 'authorization, content-type'}};
		}

		case 'star-headers': {
			return {preflight: {...ALLOW, 'access-control-allow-headers': '*'}};
		}

		case 'star-headers-credentialed': {
			return {preflight: {...ALLOW, ...credentialed, 'access-control-allow-headers': '*'}, answer: credentialed};
		}

		case 'credentials-with-star': {
			const star = {'access-control-allow-origin': '*', 'access-control-allow-credentials': 'true'};
			return {preflight: {...ALLOW, ...star}, answer: star};
		}

		case 'replay-hidden': {
			return {remove: ['access-control-expose-headers']};
		}

		case 'replay-without-cors': {
			return {};
		}

		case 'star-exposed-credentialed': {
			return {preflight: {...ALLOW, ...credentialed}, answer: {...credentialed, 'access-control-expose-headers': '*'}};
		}
	}
}

export function corsServer(origin: string, how: CorsCase): TestServer {
	const server = honestServer({cors: {origin, allowHeaders: ['Authorization']}});
	const {preflight, answer = {}, remove = []} = headersOf(origin, how);
	return {
		executions: server.executions,
		async handle(request) {
			if (request.method === 'OPTIONS' && preflight) return new Response(null, {status: 204, headers: {'access-control-allow-origin': origin, ...preflight}});
			const response = await server.handle(request);
			const headers = new Headers(response.headers);
			// A CORS layer behind the idempotency one: replays go out without its headers.
			if (how === 'replay-without-cors' && headers.get('idempotent-replayed') === 'true') for (const name of [...headers.keys()].filter(name => name.startsWith('access-control-'))) headers.delete(name);
			for (const name of remove) headers.delete(name);
			for (const [name, value] of Object.entries(answer)) headers.set(name, value);
			return new Response(response.body, {status: response.status, statusText: response.statusText, headers});
		},
	};
}
