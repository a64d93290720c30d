import type {IntentResult, ResponseInfo} from '../types.js';
import {SendOnceError} from './send-once-error.js';

/**
 * The server refused the request for good (a 4xx on its first attempt, or its key closed by a
 * check, `result.status` `'not-sent'`): nothing happened. Thrown
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
	readonly result: Extract<IntentResult, {status: 'failed' | 'not-sent'}>;

	constructor(result: Extract<IntentResult, {status: 'failed' | 'not-sent'}>) {
		super('REQUEST_REFUSED', process.env.NODE_ENV !== 'production' ? `The server refused the request (${result.status === 'failed' ? result.response.status : 'its key was closed'}); nothing happened` : String(result.response.status));
		this.response = result.response;
		this.data = 'data' in result ? result.data : undefined;
		this.result = result;
	}
}
