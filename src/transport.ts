import ky from 'ky';
import type {FetchLike, KyLike} from './types.js';

/** One HTTP exchange, nothing more: retries, timeouts and classification are sendonce's. */
export type Transport = (url: string, init: {
	method: string;
	headers: Record<string, string>;
	body?: string;
	signal: AbortSignal;
}) => Promise<Response>;

// ky's own retry, timeout and HTTP-error throwing would fight ours; a prefixUrl would
// change the stored URL.
const KY_OVERRIDES = {retry: 0, timeout: false, throwHttpErrors: false, prefixUrl: ''};

function isKy(value: FetchLike | KyLike): value is KyLike {
	return typeof (value as Partial<KyLike>).extend === 'function' && typeof (value as Partial<KyLike>).create === 'function';
}

/** ky by default; a ky instance keeps its hooks; any fetch-compatible function is wrapped in ky. */
export function createTransport(fetchOption: FetchLike | KyLike | undefined): Transport {
	const instance: KyLike = fetchOption && isKy(fetchOption)
		? fetchOption.extend(KY_OVERRIDES)
		: (ky as unknown as KyLike).create(fetchOption ? {...KY_OVERRIDES, fetch: fetchOption} : KY_OVERRIDES);
	return async (url, init) => instance(url, init);
}
