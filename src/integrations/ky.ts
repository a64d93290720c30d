import type {BeforeRequestHook, BeforeRetryHook, Options, ShouldRetryState} from 'ky';
import {isSendOnceError} from '../core/errors/send-once-error.js';
import type {IntentInit} from '../core/types.js';
import type {SendOnceClient} from '../core/client-api.js';
import {createFetch} from './fetch.js';

declare module 'ky' {
	interface Options {
		/**
		 * Makes this POST, PUT, PATCH or DELETE an intent (with `sendonceKy`): its scope, or the
		 * scope and `replace`. Every retry sends the same bytes with the same key.
		 */
		intent?: IntentInit['intent'];
	}
}

/**
 * Options for {@link sendonceKy}.
 *
 * @example
 * import ky from 'ky';
 * import {sendonceKy} from 'sendonce/ky';
 *
 * const api = ky.extend(sendonceKy(client, {all: true}));
 */
export interface SendonceKyOptions {
	/**
	 * Make every POST, PUT, PATCH and DELETE an intent, not only those with an `intent` option;
	 * their scope is then the method and the URL. A body that cannot be stored and sent again
	 * byte for byte (multipart, binary) then rejects with `InvalidRequestError`.
	 * @default false
	 */
	all?: boolean;
	/**
	 * ky's `timeout` for the calls that are not intents, in milliseconds, or `false`: sendonceKy
	 * turns ky's own off, which would fire while sendonce still retries an intent. A timeout ends
	 * such a call with an error named `TimeoutError`, as ky's does.
	 * @default 10_000, ky's default
	 */
	timeout?: number | false;
}

const INTENT_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * ky options (a `beforeRequest` hook and a retry rule) that send each POST, PUT, PATCH and DELETE
 * with an `intent` option through `createFetch(client)` (`sendonce/fetch`): the same key across retries, reloads and
 * restarts. ky's own retry stays off for those calls and its timeout for every call (sendonce
 * owns them; the other calls get the `timeout` given here); its hooks that follow,
 * `throwHttpErrors` and body shortcuts apply to the answer as usual, `.arrayBuffer()` and
 * `.blob()` to the bytes the server sent. A `retry.shouldRetry` of your own replaces the one that
 * keeps ky from retrying them. "May have been sent" rejects with `OutcomeUnknownError`.
 *
 * @example
 * import ky from 'ky';
 * import {createClient} from 'sendonce';
 * import {sendonceKy} from 'sendonce/ky';
 *
 * const api = ky.extend({prefixUrl: 'https://shop.example', ...sendonceKy(createClient())});
 * const order = await api.post('orders', {json: {sku: 'A1'}, intent: 'checkout:42'}).json();
 */
export function sendonceKy(client: SendOnceClient, {all = false, timeout = 10_000}: SendonceKyOptions = {}): Options {
	// The requests sendonce answered: an error about one of them is final, never ky's to retry.
	const answered = new WeakSet<Request>();
	const isIntent = (method: string, intent: IntentInit['intent']) => INTENT_METHODS.has(method.toUpperCase()) && (intent !== undefined || all);
	const intentFetch = createFetch(client);
	const send = async (request: Request, intent: IntentInit['intent']) => {
		answered.add(request);
		return intentFetch(request, intent === undefined ? {} : {intent});
	};

	// Calls given a `timeout` of ky's after sendonceKy: ky's timer runs for them, ours must not cap it.
	const kyTimed = new WeakSet<Request>();
	const beforeRequest: BeforeRequestHook = async (request, options) => {
		const {intent} = options as {intent?: IntentInit['intent']};
		if (isIntent(request.method, intent)) return send(request, intent);
		if ((options as {timeout?: unknown}).timeout !== false) kyTimed.add(request);
	};

	const shouldRetry = ({error}: ShouldRetryState) => (isFinal(error) ? false : undefined);
	// Hooks add up where options replace each other: a per-call `retry: 2` drops `shouldRetry`,
	// this still stops the retry.
	const beforeRetry: BeforeRetryHook = ({error}) => {
		if (isFinal(error)) throw error;
	};

	const isFinal = (error: unknown) => {
		const {request} = error as {request?: unknown};
		return isSendOnceError(error) || (request instanceof Request && answered.has(request));
	};

	// Where an app's own `beforeRequest` hook returned a Request, ky skips the hooks after it:
	// an intent call then reaches ky's fetch, and is sent through sendonce from there. ky's
	// `timeout` is off, as its timer would already run by then: other calls get one here.
	const fetch = async (input: Request | URL | string, init?: RequestInit & {intent?: IntentInit['intent']}) => {
		const request = input instanceof Request ? input : new Request(input, init);
		if (isIntent(request.method, init?.intent)) return send(request, init?.intent);
		if (timeout === false || (input instanceof Request && kyTimed.has(input))) return globalThis.fetch(input, init);
		const controller = new AbortController();
		const {signal} = request;
		const abort = () => controller.abort(signal.reason);
		if (signal.aborted) abort();
		signal.addEventListener('abort', abort);
		return new Promise<Response>((resolve, reject) => {
			const timer = setTimeout(() => {
				reject(Object.assign(new Error(`Request timed out: ${request.method} ${request.url}`), {name: 'TimeoutError', request}));
				controller.abort();
			}, timeout);
			void globalThis.fetch(input, {...init, signal: controller.signal}).then(resolve, reject).finally(() => {
				clearTimeout(timer);
				signal.removeEventListener('abort', abort);
			});
		});
	};

	return {hooks: {beforeRequest: [beforeRequest], beforeRetry: [beforeRetry]}, retry: {shouldRetry}, timeout: false, fetch};
}
