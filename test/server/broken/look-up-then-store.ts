/*
 * Breaks the atomic claim, and hides it behind one answer for all: it marks its replays, but
 * looks the key up, does the work, then stores the answer, and every order answers
 * `{"status":"queued"}`. Concurrent duplicates all run, and look like one run's joined answers
 * (issue 21's "PASS for a racy server"). With `located`, each run names its order in `Location`:
 * the signal that tells the runs apart.
 */
import {parseKeyHeader} from '../../../src/server.js';
import type {TestServer} from '../honest.js';

/** How long the work takes: long enough for concurrent duplicates to overlap it. */
const WORK_MS = 300;

export function lookUpThenStore({located = false} = {}): TestServer {
	const executions = new Map<string, number>();
	const answers = new Map<string, {body: string; headers: Record<string, string>}>();
	let next = 0;
	return {
		executions,
		async handle(request) {
			const parsed = parseKeyHeader(request.headers.get('idempotency-key'));
			if (parsed.type !== 'key') return Response.json({title: 'Idempotency key missing or malformed'}, {status: 400});
			const key = `${request.headers.get('authorization') ?? ''} ${parsed.key}`;
			const body = await request.text();
			const stored = answers.get(key);
			if (stored) {
				if (stored.body !== body) return Response.json({title: 'Key reused with another body'}, {status: 422});
				return Response.json({status: 'queued'}, {status: 202, headers: {...stored.headers, 'idempotent-replayed': 'true'}});
			}

			await new Promise(resolve => setTimeout(resolve, WORK_MS));
			executions.set(key, (executions.get(key) ?? 0) + 1);
			const headers: Record<string, string> = located ? {location: `/orders/ord_${++next}`} : {};
			answers.set(key, {body, headers});
			return Response.json({status: 'queued'}, {status: 202, headers});
		},
	};
}
