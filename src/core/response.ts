import type {IntentResult} from './types.js';

/** Statuses whose response has no body, by the Fetch standard. */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * A settled result as the `Response` fetch would have given: status, headers and the body as it
 * came (`text`), readable once. Where this page did not receive the body itself (another tab
 * sent it), it is written again from the parsed `data`.
 */
export function toResponse(result: Extract<IntentResult, {status: 'succeeded' | 'failed'}>, text: string | undefined, url: string): Response {
	const {status, headers, redirected} = result.response;
	const body = NULL_BODY.has(status) ? null : text ?? (result.data === undefined ? '' : typeof result.data === 'string' ? result.data : JSON.stringify(result.data));
	const response = new Response(body, {status, headers});
	// As fetch's own: where the answer came from.
	Object.defineProperties(response, {url: {value: result.response.url ?? url}, redirected: {value: redirected === true}});
	return response;
}
