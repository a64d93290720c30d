import type {BeforeRequestHook, Options, ShouldRetryState} from 'ky';
import {isSendOnceError} from '../errors/send-once-error.js';
import type {IntentInit} from '../types.js';
import type {SendOnceClient} from '../client-api.js';

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
}

const INTENT_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * ky options (a `beforeRequest` hook and a retry rule) that send each POST, PUT, PATCH and DELETE
 * with an `intent` option through `client.fetch`: the same key across retries, reloads and
 * restarts. ky's own retry and timeout stay off for those calls (sendonce owns them); its hooks
 * that follow, `throwHttpErrors` and body shortcuts apply to the answer as usual. A
 * `retry.shouldRetry` of your own replaces the one that keeps ky from retrying them. "May have been sent" rejects
 * with `OutcomeUnknownError`.
 *
 * @example
 * import ky from 'ky';
 * import {createClient} from 'sendonce';
 * import {sendonceKy} from 'sendonce/ky';
 *
 * const api = ky.extend({prefixUrl: 'https://shop.example', ...sendonceKy(createClient())});
 * const order = await api.post('orders', {json: {sku: 'A1'}, intent: 'checkout:42'}).json();
 */
export function sendonceKy(client: SendOnceClient, {all = false}: SendonceKyOptions = {}): Options {
	// The requests this hook answered: an error about one of them is final, never ky's to retry.
	const answered = new WeakSet<Request>();
	const beforeRequest: BeforeRequestHook = async (request, options) => {
		const {intent} = options as {intent?: IntentInit['intent']};
		if (!INTENT_METHODS.has(request.method) || (intent === undefined && !all)) return;
		answered.add(request);
		return client.fetch(request, intent === undefined ? {} : {intent});
	};

	const shouldRetry = ({error}: ShouldRetryState) => {
		const {request} = error as {request?: unknown};
		return isSendOnceError(error) || (request instanceof Request && answered.has(request)) ? false : undefined;
	};

	return {hooks: {beforeRequest: [beforeRequest]}, retry: {shouldRetry}};
}
