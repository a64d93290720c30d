import type {Answer} from './classify.js';
import type {Transport} from './transport.js';
import type {ResponseInfo} from './types.js';
import {follow} from './wait.js';

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
 * One attempt: send, read the whole answer, all within `timeout` ms (a timer rather than
 * `AbortSignal.timeout`, which Hermes lacks). Never throws: no answer is an `Answer` too.
 */
export async function attempt(
	transport: Transport,
	request: {url: string; method: string; headers: Record<string, string>; body?: string},
	timeout: number,
	signal?: AbortSignal,
): Promise<Answer> {
	// One controller per attempt, aborted by the caller or by the timer: AbortSignals are not
	// free (Node makes each one transferable), and ky adds its own.
	const controller = new AbortController();
	const linked = controller.signal;
	const unlink = follow(signal, controller);
	let timedOut = false;
	const timeoutId = setTimeout(() => {
		timedOut = true;
		controller.abort(timeoutError(timeout));
	}, timeout);
	try {
		// Some transports (msw, polyfills) do not end a body read on abort: race the timer too.
		const stopped = new Promise<never>((_, reject) => {
			linked.addEventListener('abort', () => reject(linked.reason), {once: true});
		});
		stopped.catch(() => undefined);
		const response = await transport(request.url, {...request, signal: linked});
		const text = await Promise.race([response.text(), stopped]);
		const info: ResponseInfo = {status: response.status, headers: headersOf(response)};
		return {response: info, data: parseBody(text, info.headers['content-type'])};
	} catch (error) {
		return {error: timedOut ? linked.reason : error, timedOut};
	} finally {
		clearTimeout(timeoutId);
		unlink();
	}
}
