import {SendOnceError} from './send-once-error.js';

/**
 * The request cannot be made into an intent: a GET or HEAD, a `FormData`, `Blob` or stream
 * body, an unparseable URL, a `json` value that is not serialisable, a body over the size
 * limit. Thrown by `client.intent()` before anything is stored; the message names the field.
 *
 * @example
 * import {InvalidRequestError} from 'sendonce';
 *
 * try {
 * 	await client.intent('upload', {url: '/api/upload', body: formData as never});
 * } catch (error) {
 * 	if (error instanceof InvalidRequestError) console.error(error.message); // names `body`
 * }
 */
export class InvalidRequestError extends SendOnceError {
	override name = 'InvalidRequestError' as const;
	declare readonly code: 'INVALID_REQUEST';

	constructor(message: string, options?: {cause?: unknown}) {
		super('INVALID_REQUEST', message, options);
	}
}

/**
 * @internal An `InvalidRequestError` about `field`. `long` is what development builds say;
 * production builds pass `false`, and the message names the field alone.
 */
export function invalidRequest(field: string, long: string | false, options?: {cause?: unknown}): InvalidRequestError {
	return new InvalidRequestError(long || `Invalid \`${field}\``, options);
}
