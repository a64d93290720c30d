import type {Answer} from './classify.js';
import type {Transport} from './transport.js';
import type {ResponseInfo} from './types.js';
import {follow, untilAborted} from './wait.js';

function timeoutError(ms: number): Error {
	const error = new Error(`The attempt timed out after ${ms} ms`);
	error.name = 'TimeoutError';
	return error;
}

function headersOf(response: Response): Record<string, string> {
	const headers: Record<string, string> = {};
	response.headers.forEach((value, name) => {
		headers[name.toLowerCase()] = value;
	});
	return headers;
}

/** Media types whose body `data` gives as text: any other's `data` is its bytes. */
const TEXT = /^\s*(?:text\/[^;]*|[^/;\s]+\/(?:[^;\s]*\+)?(?:json|xml|yaml|x-yaml|javascript|ecmascript|x-javascript|x-www-form-urlencoded|x-ndjson|ndjson|jsonl)|[^/;\s]+\/json-seq)\s*(?:;|$)/i;

function parseBody(text: string, contentType: string | undefined): unknown {
	if (text === '') return undefined;
	if (contentType && /[/+]json\b/i.test(contentType)) {
		try {
			return JSON.parse(text) as unknown;
		} catch {
			return text;
		}
	}

	return text;
}

/**
 * An answer the transport will not let us read: `mode: 'no-cors'` (opaque), `redirect:
 * 'manual'` in a browser (opaqueredirect), or a network error dressed as a response (status 0).
 */
function isUnreadable(response: Response): boolean {
	return response.type === 'opaque' || response.type === 'opaqueredirect' || response.type === 'error' || response.status === 0;
}

function unreadableError(response: Response): Error {
	const error = new Error(process.env.NODE_ENV !== 'production' ? `Unreadable ${response.type} response (status ${response.status}): no-cors strips the key and hides the answer, so it is not retried; allow the request with CORS instead` : response.type);
	error.name = 'UnreadableResponseError';
	return error;
}

/**
 * One attempt: `headers()`, send, read the whole answer, all within `timeout` ms (a timer
 * rather than `AbortSignal.timeout`, which Hermes lacks) and all raced against `signal`, so
 * that a transport or a `headers()` that ignores both cannot hang the send. Never throws: no
 * answer is an `Answer` too. `beforeSend` runs once the headers are known and before a byte
 * leaves (the write-ahead); what it throws is rethrown, and `false` means: do not send.
 * Resolves to undefined when nothing was sent (`beforeSend` said no, or `signal` aborted
 * first); rejects when `headers()` or `beforeSend` threw or `headers()` outlived the timeout.
 */
export async function attempt(
	transport: Transport,
	request: {url: string; method: string; headers: () => Record<string, string> | Promise<Record<string, string>>; body?: string; redirect?: RequestRedirect},
	timeout: number,
	signal: AbortSignal | undefined,
	beforeSend: () => Promise<boolean>,
): Promise<Answer | undefined> {
	// One controller per attempt, aborted by the caller or by the timer.
	const controller = new AbortController();
	const linked = controller.signal;
	const unlink = follow(signal, controller);
	let timedOut = false;
	const timeoutId = setTimeout(() => {
		timedOut = true;
		controller.abort(timeoutError(timeout));
	}, timeout);
	let sent = false;
	try {
		const headers = await untilAborted(Promise.resolve().then(request.headers), linked);
		if (!await beforeSend()) return undefined;
		sent = true;
		if (linked.aborted) throw linked.reason;
		const response = await untilAborted(transport(request.url, {method: request.method, headers, body: request.body, signal: linked, ...request.redirect && {redirect: request.redirect}}), linked);
		if (isUnreadable(response)) {
			void response.body?.cancel().catch(() => undefined);
			return {error: unreadableError(response), timedOut: false, unreadable: true};
		}

		const info: ResponseInfo = {status: response.status, headers: headersOf(response)};
		if (response.redirected) info.redirected = true;
		if (response.redirected && response.url) info.url = response.url;
		const type = info.headers['content-type'];
		const textual = !type || TEXT.test(type);
		// The bytes as they came, for `client.fetch` to hand on; decoded (UTF-8, as `text()` does)
		// only for `data` of a textual type. Hermes has no TextDecoder, and React Native's fetch
		// (no body stream) reads bytes only from 0.73.1: there a textual body is read as text.
		// Some transports (msw, polyfills) do not end a body read on abort: race it too.
		const body = await untilAborted<ArrayBuffer | string>(textual && !(response.body && typeof TextDecoder == 'function') ? response.text() : response.arrayBuffer(), linked);
		return {response: info, data: textual ? parseBody(typeof body == 'string' ? body : new TextDecoder().decode(body), type) : (body as ArrayBuffer).byteLength ? body : undefined, body, ...(response.type === 'cors' ? {cors: true} : {})};
	} catch (error) {
		if (sent) return {error: timedOut ? linked.reason : error, timedOut};
		// Nothing left: `headers()` (or the write-ahead) failed, hung, or the caller aborted.
		if (timedOut) throw Object.assign(new Error(`\`headers\` took over ${timeout} ms; nothing was sent`), {name: 'TimeoutError'});
		if (linked.aborted) return undefined;
		throw error;
	} finally {
		clearTimeout(timeoutId);
		unlink();
	}
}
