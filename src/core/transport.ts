import type {FetchLike, KyLike} from './types.js';

/** One HTTP exchange, nothing more: retries, timeouts and classification are sendonce's. */
export type Transport = (url: string, init: {
	method: string;
	headers: Record<string, string>;
	body?: string;
	signal: AbortSignal;
	/** A check of a key is never followed elsewhere: `'error'`. */
	redirect?: RequestRedirect;
}) => Promise<Response>;

// ky's own retry, timeout and HTTP-error throwing would fight ours; a prefixUrl would
// change the stored URL.
const KY_OVERRIDES = {retry: 0, timeout: false, throwHttpErrors: false, prefixUrl: ''};

/** A ky instance, told apart by its shape: the core never imports ky. */
function isKy(value: FetchLike | KyLike): value is KyLike {
	return typeof (value as Partial<KyLike>).extend === 'function' && typeof (value as Partial<KyLike>).create === 'function';
}

/**
 * `fetch` itself by default, looked up at each call (so a polyfill or a test's stub installed
 * later is used); any fetch-compatible function, called with the URL and an init object (no
 * `Request` is built); a ky instance, with its hooks and without its retry and timeout.
 */
export function createTransport(fetchOption: FetchLike | KyLike | undefined): Transport {
	if (fetchOption && isKy(fetchOption)) {
		const instance = fetchOption.extend(KY_OVERRIDES);
		return async (url, init) => instance(url, init);
	}

	return async (url, init) => (fetchOption ?? fetch)(url, init);
}
