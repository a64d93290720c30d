/*
 * Breaks the atomic claim: it looks the key up, does the work, then stores the answer, so
 * duplicates that arrive while the work runs all miss the look-up and all run. Sequential
 * duplicates, mismatches, keys raw or quoted and users are handled as they should be.
 */
import {parseKeyHeader} from '../../../src/server.js';
import {orders} from '../orders.js';
import type {TestServer} from '../honest.js';

/** How long the work takes: long enough for concurrent duplicates to overlap it. */
const WORK_MS = 300;

export function nonAtomic(): TestServer {
	const created = orders();
	const answers = new Map<string, {body: string; status: number; answer: string}>();
	return {
		executions: created.executions,
		async handle(request) {
			const parsed = parseKeyHeader(request.headers.get('idempotency-key'));
			if (parsed.type !== 'key') return Response.json({title: 'Idempotency key missing or malformed'}, {status: 400});
			const key = `${request.headers.get('authorization') ?? ''} ${parsed.key}`;
			const body = await request.text();
			const stored = answers.get(key);
			if (stored) {
				if (stored.body !== body) return Response.json({title: 'Key reused with another body'}, {status: 422});
				return new Response(stored.answer, {status: stored.status, headers: {'content-type': 'application/json', 'idempotent-replayed': 'true'}});
			}

			await new Promise(resolve => setTimeout(resolve, WORK_MS));
			const response = await created.create(new Request(request.url, {method: 'POST', headers: request.headers, body}), parsed.key);
			const answer = await response.text();
			answers.set(key, {body, status: response.status, answer});
			return new Response(answer, {status: response.status, headers: {'content-type': 'application/json'}});
		},
	};
}
