import type {IntentResult} from './types.js';

/** Statuses whose response has no body, by the Fetch standard. */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * A settled result as the `Response` fetch would have given: status, headers and the body as it
 * came, byte for byte, readable once. Where this page did not receive the body itself (another
 * tab sent it), it is made again from `data`: the same bytes for a binary answer, text encoded
 * as UTF-8, JSON serialised again.
 */
export function toResponse(result: Extract<IntentResult, {status: 'succeeded' | 'failed'}>, body: ArrayBuffer | string | undefined, url: string): Response {
	const {status, headers, redirected} = result.response;
	const {data} = result;
	// A JSON string (`"ok"`) is serialised again too: its text alone would not parse.
	const text = typeof data == 'string' && !/[/+]json\b/i.test(headers['content-type'] ?? '');
	const response = new Response(NULL_BODY.has(status) ? null : body ?? (data === undefined ? '' : text || data instanceof ArrayBuffer ? data : JSON.stringify(data)), {status, headers});
	// As fetch's own: where the answer came from.
	Object.defineProperties(response, {url: {value: result.response.url ?? url}, redirected: {value: redirected === true}});
	return response;
}
