/**
 * Every code a {@link SendOnceError} can carry.
 *
 * @example
 * import {isSendOnceError, type SendOnceErrorCode} from 'sendonce';
 *
 * const code: SendOnceErrorCode | undefined = isSendOnceError(error) ? error.code : undefined;
 */
export type SendOnceErrorCode =
	| 'INVALID_REQUEST'
	| 'UNRESOLVED_INTENT'
	| 'STORE_UNAVAILABLE'
	| 'STORE_QUOTA'
	| 'STORE_CORRUPT'
	| 'STORE_VERSION'
	| 'NO_SECURE_RANDOM'
	| 'NO_WEB_CRYPTO'
	| 'OUTCOME_UNKNOWN'
	| 'REQUEST_REFUSED';

const NAMES = new Set([
	'SendOnceError',
	'InvalidRequestError',
	'UnresolvedIntentError',
	'StoreError',
	'KeyGenerationError',
	'OutcomeUnknownError',
	'RequestRefusedError',
]);

/**
 * The base of every error sendonce throws. `send()` rejects only with these (or a `TypeError`
 * for a programming mistake); network outcomes are results, never errors.
 *
 * @example
 * import {SendOnceError} from 'sendonce';
 *
 * try {
 * 	await client.intent('contact-form', {url: '/api/contact', json: form});
 * } catch (error) {
 * 	if (error instanceof SendOnceError) console.warn(error.code, error.message);
 * }
 */
export class SendOnceError extends Error {
	override name: string = 'SendOnceError';
	readonly code: SendOnceErrorCode;

	constructor(code: SendOnceErrorCode, message: string, options?: {cause?: unknown}) {
		super(message, options);
		this.code = code;
	}
}

/**
 * Whether `error` is a sendonce error. Unlike `instanceof`, this also recognises errors that
 * crossed a realm (an iframe, a worker, a structured clone), by their `name` and `code`.
 *
 * @example
 * import {isSendOnceError} from 'sendonce';
 *
 * if (isSendOnceError(error) && error.code === 'UNRESOLVED_INTENT') askTheUser(error.previous);
 */
export function isSendOnceError(error: unknown): error is SendOnceError {
	if (error instanceof SendOnceError) return true;
	if (typeof error !== 'object' || error === null) return false;
	const {name, code} = error as {name?: unknown; code?: unknown};
	return typeof name === 'string' && NAMES.has(name) && typeof code === 'string';
}
