/** A request body over `maxBody`: answered 413, nothing claimed. */
export class BodyTooLargeError extends Error {
	override name = 'BodyTooLargeError' as const;
	readonly limit: number;

	constructor(limit: number) {
		super(`The request body is larger than ${limit} bytes`);
		this.limit = limit;
	}
}

/** Whether `error` is a body over the limit, here or from another copy of this module. */
export function isBodyTooLarge(error: unknown): error is BodyTooLargeError {
	return (error as {name?: unknown} | null)?.name === 'BodyTooLargeError';
}
