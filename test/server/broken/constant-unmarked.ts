/*
 * Breaks nothing a replay needs, but hides every run: one body for every order
 * (`{"status":"queued"}`), and replays without `Idempotent-Replayed`. Whether a duplicate ran
 * cannot be told from outside; a check that says "pass" here is guessing.
 */
import {rewrittenServer, type TestServer} from '../honest.js';

export function constantUnmarked(): TestServer {
	return rewrittenServer(response => {
		const headers = new Headers(response.headers);
		headers.delete('idempotent-replayed');
		const body = response.status === 201 ? JSON.stringify({status: 'queued'}) : response.body;
		return new Response(body, {status: response.status, headers});
	// Orders long enough that every duplicate sent together meets the first in progress: unmarked
	// replays of a finished one would make probe 5's evidence a matter of timing.
	}, 300);
}
