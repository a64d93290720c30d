import {SendOnceError} from './send-once-error.js';

/**
 * Why a store failed.
 *
 * @example
 * import {StoreError, type StoreErrorCode} from 'sendonce';
 *
 * const code: StoreErrorCode | undefined = error instanceof StoreError ? error.code : undefined;
 */
export type StoreErrorCode = 'STORE_UNAVAILABLE' | 'STORE_QUOTA' | 'STORE_CORRUPT' | 'STORE_VERSION';

/**
 * The store could not be used: a forced store that this environment does not offer
 * (`STORE_UNAVAILABLE`), a full disk (`STORE_QUOTA`), a store that returned something
 * unusable (`STORE_CORRUPT`), or a record written by a newer version of the app during a
 * rolling deploy (`STORE_VERSION`: reload the page). An intent whose record could not be
 * written is never sent.
 *
 * @example
 * import {StoreError} from 'sendonce';
 *
 * try {
 * 	await client.intent('checkout', {url: '/api/pay', json: cart});
 * } catch (error) {
 * 	if (error instanceof StoreError && error.code === 'STORE_QUOTA') showDiskFullMessage();
 * }
 */
export class StoreError extends SendOnceError {
	override name = 'StoreError' as const;
	declare readonly code: StoreErrorCode;

	constructor(code: StoreErrorCode, message: string, options?: {cause?: unknown}) {
		super(code, message, options);
	}
}
