import axios, {type AxiosAdapter, type AxiosResponse, type InternalAxiosRequestConfig} from 'axios';
import type {IntentInit} from '../core/types.js';
import type {SendOnceClient} from '../core/client-api.js';
import {createFetch} from './fetch.js';

declare module 'axios' {
	interface AxiosRequestConfig {
		/**
		 * Makes this POST, PUT, PATCH or DELETE an intent (with `sendonceAdapter`): its scope, or
		 * the scope and `replace`. Every retry sends the same bytes with the same key.
		 */
		intent?: IntentInit['intent'];
	}
}

/**
 * Options for {@link sendonceAdapter}.
 *
 * @example
 * import axios from 'axios';
 * import {sendonceAdapter} from 'sendonce/axios';
 *
 * const api = axios.create({adapter: sendonceAdapter(client, {fallback: 'fetch'})});
 */
export interface SendonceAdapterOptions {
	/**
	 * Where every other request goes: an adapter, or a name or list of names axios knows.
	 * @default ['xhr', 'http', 'fetch'], axios' own default
	 */
	fallback?: Parameters<typeof axios.getAdapter>[0];
}

const INTENT_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The body as axios' own adapters read it for `responseType` (JSON is parsed after, by axios). */
async function dataOf(response: Response, responseType: string | undefined): Promise<unknown> {
	switch (responseType?.toLowerCase()) {
		case 'arraybuffer': return response.arrayBuffer();
		case 'blob': return response.blob();
		case 'formdata': return response.formData();
		case 'stream': return response.body;
		default: return response.text();
	}
}

/**
 * The call's `signal` and `cancelToken` as one signal for sendonce, taken off `config`: axios
 * checks them again once the adapter answers and would turn any outcome, an order placed
 * included, into a `CanceledError`. An abort ends the caller's wait as sendonce says: before
 * anything left, with the abort; after, with `OutcomeUnknownError`.
 */
function takeCancellation(config: InternalAxiosRequestConfig): AbortSignal {
	const controller = new AbortController();
	const {signal, cancelToken} = config;
	config.signal = undefined;
	config.cancelToken = undefined;
	const abort = (reason: unknown) => controller.abort(reason);
	if (signal?.aborted) abort((signal as AbortSignal).reason);
	else signal?.addEventListener?.('abort', () => abort((signal as AbortSignal).reason));
	void cancelToken?.promise.then(abort);
	return controller.signal;
}

/**
 * An axios adapter that sends each POST, PUT, PATCH and DELETE with an `intent` in its config
 * through `createFetch(client)` (`sendonce/fetch`): the same key across retries, reloads and restarts. Everything else goes
 * to axios' own adapter. A settled answer resolves or rejects as axios would (`validateStatus`,
 * an `AxiosError`, `responseType`, `transformResponse`); "may have been sent" rejects with
 * `OutcomeUnknownError`, which `axios.isAxiosError` does not claim. Its `timeout` is sendonce's.
 *
 * @example
 * import axios from 'axios';
 * import {createClient} from 'sendonce';
 * import {sendonceAdapter} from 'sendonce/axios';
 *
 * const api = axios.create({baseURL: 'https://shop.example', adapter: sendonceAdapter(createClient())});
 * const {data} = await api.post('/orders', {sku: 'A1'}, {intent: 'checkout:42'});
 */
export function sendonceAdapter(client: SendOnceClient, {fallback = ['xhr', 'http', 'fetch']}: SendonceAdapterOptions = {}): AxiosAdapter {
	const intentFetch = createFetch(client);
	return async (config: InternalAxiosRequestConfig): Promise<AxiosResponse> => {
		const method = (config.method ?? 'get').toUpperCase();
		if (config.intent === undefined || !INTENT_METHODS.has(method)) return axios.getAdapter(fallback, config)(config);

		const response = await intentFetch(axios.getUri(config), {
			method,
			headers: axios.AxiosHeaders.from(config.headers).normalize(false).toJSON(true) as Record<string, string>,
			body: config.data as BodyInit | undefined,
			intent: config.intent,
			signal: takeCancellation(config),
		});
		const answer: AxiosResponse = {
			data: await dataOf(response, config.responseType),
			status: response.status,
			statusText: response.statusText,
			headers: axios.AxiosHeaders.from(Object.fromEntries(response.headers)),
			config,
			request: {},
		};
		const {validateStatus} = config;
		if (!validateStatus || validateStatus(answer.status)) return answer;
		throw new axios.AxiosError(`Request failed with status code ${answer.status}`, answer.status >= 400 && answer.status < 500 ? axios.AxiosError.ERR_BAD_REQUEST : axios.AxiosError.ERR_BAD_RESPONSE, config, answer.request, answer);
	};
}
