import type {IntentResult, ResponseInfo} from '../types.js';
import {SendOnceError} from './send-once-error.js';

/**
 * The server refused the request for good (a 4xx on its first attempt): nothing happened. Thrown
 * where an integration must reject (TanStack Query's `mutationFn`); `fetch`-shaped integrations
 * return the 4xx `Response` instead, as `fetch` does.
 *
 * @example
 * import {RequestRefusedError} from 'sendonce';
 *
 * const onError = (error: Error) => {
 * 	if (error instanceof RequestRefusedError) showRefused(error.response.status, error.data);
 * };
 */
export class RequestRefusedError extends SendOnceError {
	override name = 'RequestRefusedError' as const;
	declare readonly code: 'REQUEST_REFUSED';
	readonly response: ResponseInfo;
	/** The parsed body of the refusal. */
	readonly data: unknown;
	readonly result: Extract<IntentResult, {status: 'failed'}>;

	constructor(result: Extract<IntentResult, {status: 'failed'}>) {
		super('REQUEST_REFUSED', process.env.NODE_ENV !== 'production' ? `The server refused the request (${result.response.status}); nothing happened` : String(result.response.status));
		this.response = result.response;
		this.data = result.data;
		this.result = result;
	}
}
