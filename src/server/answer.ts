import type {StoredAnswer} from './key-store.js';

/** Statuses whose responses have no body (the Fetch standard refuses one). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** A response's body as bytes, with the response rebuilt around them to send on. */
export async function readAnswer(response: Response, keep: ReadonlySet<string>): Promise<{answer: StoredAnswer; response: Response}> {
	const body = new Uint8Array(await response.arrayBuffer());
	const headers: Record<string, string> = {};
	for (const [name, value] of response.headers) if (keep.has(name)) headers[name] = value;
	const rebuilt = new Response(NULL_BODY.has(response.status) ? null : body, {status: response.status, statusText: response.statusText, headers: response.headers});
	return {answer: {status: response.status, headers, body}, response: rebuilt};
}

/** The stored answer, sent again: its status, its safe headers, its body, marked as a replay. */
export function replayAnswer(answer: StoredAnswer): Response {
	// A Buffer from a store is a Uint8Array over a shared ArrayBuffer: as good a body.
	return new Response(NULL_BODY.has(answer.status) ? null : answer.body as Uint8Array<ArrayBuffer>, {
		status: answer.status,
		headers: {...answer.headers, 'idempotent-replayed': 'true'},
	});
}
