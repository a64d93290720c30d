/*
 * Breaks the atomic claim: it looks the key up, does the work, then stores the answer, so
 * duplicates that arrive while the work runs all miss the look-up and all run. Sequential
 * duplicates (marked replays), mismatches, keys raw or quoted and users are handled as they
 * should be. What each run answers is `answer`:
 * - `order`: the order it made, with its own id (the runs tell themselves apart);
 * - `queued`: `{"status":"queued"}` for every order, which hides the race behind one answer for
 *   all (issue 21's "PASS for a racy server");
 * - `located`: the same, with each run naming its order in `Location`: the signal that tells
 *   the runs apart.
 */
import {parseKeyHeader} from '../../../src/server.js';
import type {TestServer} from '../honest.js';
import {orders} from '../orders.js';

/** How long the work takes: long enough for concurrent duplicates to overlap it. */
const WORK_MS = 300;

export function lookUpThenStore({answer = 'order'}: {answer?: 'order' | 'queued' | 'located'} = {}): TestServer {
	const created = orders();
	const answers = new Map<string, {body: string; status: number; text: string; headers: Record<string, string>}>();
	let next = 0;
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
				return new Response(stored.text, {status: stored.status, headers: {...stored.headers, 'content-type': 'application/json', 'idempotent-replayed': 'true'}});
			}

			await new Promise(resolve => setTimeout(resolve, WORK_MS));
			const made = await created.create(new Request(request.url, {method: 'POST', headers: request.headers, body}), parsed.key);
			const headers: Record<string, string> = answer === 'located' ? {location: `/orders/ord_${++next}`} : {};
			const text = answer === 'order' ? await made.text() : JSON.stringify({status: 'queued'});
			const status = answer === 'order' ? made.status : 202;
			answers.set(key, {body, status, text, headers});
			return new Response(text, {status, headers: {...headers, 'content-type': 'application/json'}});
		},
	};
}
